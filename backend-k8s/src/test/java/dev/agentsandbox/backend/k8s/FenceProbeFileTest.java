package dev.agentsandbox.backend.k8s;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.backend.RunSpec;
import io.fabric8.kubernetes.api.model.KubernetesList;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** verify-fence.sh must probe the policies the backend really creates, not a hand-kept copy. */
class FenceProbeFileTest {
  private static final Path FILE =
      Path.of(
              System.getProperty("basedir", "."),
              "..",
              "deploy",
              "k3s",
              "sandbox",
              "fence-probe.yaml")
          .normalize();

  @Test
  void fenceProbePoliciesAreTheGeneratedOnes() throws IOException {
    assertSameAsGenerated(Files.readString(FILE), Specs.fenceProbe("192.0.2.1/32"));
  }

  /**
   * What verify-fence.sh applies is the file with its internal range bound to the target pod: the
   * backend's own policies for an agent whose destination is that pod's /32, nothing else changed.
   */
  @Test
  void verifyFenceBindsTheInternalDestinationToItsTargetPod() throws Exception {
    Path script = FILE.resolveSibling("verify-fence.sh");
    Process process =
        new ProcessBuilder("bash", script.toString(), "--print-policies", "10.42.3.7")
            .redirectErrorStream(true)
            .start();
    String printed = new String(process.getInputStream().readAllBytes(), UTF_8);
    assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(process.exitValue()).as(printed).isZero();
    assertSameAsGenerated(printed, Specs.fenceProbe("10.42.3.7/32"));
    assertThat(run("bash", script.toString(), "--print-policies", "10.42.3"))
        .as("not an IPv4 address")
        .isEqualTo(64);
  }

  private static void assertSameAsGenerated(String yaml, RunSpec spec) {
    Object parsed = new KubernetesSerialization().unmarshal(yaml);
    // fabric8 reads a multi-document file as a list of objects.
    List<?> documents = parsed instanceof KubernetesList list ? list.getItems() : (List<?>) parsed;
    List<NetworkPolicy> generated =
        new BundleFactory(Specs.config())
            .build(spec, Optional.empty(), Optional.empty()).objects().stream()
                .filter(NetworkPolicy.class::isInstance)
                .map(NetworkPolicy.class::cast)
                .toList();
    assertThat(documents).hasSameSizeAs(generated);
    for (int i = 0; i < generated.size(); i++) {
      NetworkPolicy fromFile = (NetworkPolicy) documents.get(i);
      assertThat(fromFile.getMetadata().getName())
          .isEqualTo(generated.get(i).getMetadata().getName());
      assertThat(fromFile.getMetadata().getNamespace()).isEqualTo("agent-run-fenceprobe");
      assertThat(fromFile.getSpec())
          .as(fromFile.getMetadata().getName())
          .isEqualTo(generated.get(i).getSpec());
    }
  }

  @Test
  void verifyFenceRunsTheBackendsOwnRuntimeCheck() throws IOException {
    Path check = FILE.resolveSibling("runtime-check.sh");
    assertThat(Files.readString(check)).isEqualTo(SandboxPods.RUNTIME_CHECK_SCRIPT);
  }

  @Test
  void verifyFenceParsesAndAnswersItsUsage() throws Exception {
    Path script = FILE.resolveSibling("verify-fence.sh");
    assertThat(run("bash", "-n", script.toString())).isZero();
    assertThat(run("bash", script.toString(), "--help")).isZero();
    assertThat(run("bash", script.toString(), "--no-such-option")).isEqualTo(64);
    assertThat(run("bash", script.toString())).as("no --proxy-image").isEqualTo(64);
  }

  private static int run(String... command) throws Exception {
    Process process =
        new ProcessBuilder(command)
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new AssertionError(String.join(" ", command) + " did not end within 30 s");
    }
    return process.exitValue();
  }
}
