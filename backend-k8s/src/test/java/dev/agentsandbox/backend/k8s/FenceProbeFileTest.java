package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.KubernetesList;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
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
    Object parsed = new KubernetesSerialization().unmarshal(Files.readString(FILE));
    // fabric8 reads a multi-document file as a list of objects.
    List<?> documents = parsed instanceof KubernetesList list ? list.getItems() : (List<?>) parsed;
    List<NetworkPolicy> generated =
        new BundleFactory(Specs.config())
            .build(Specs.spec("fenceprobe"), Optional.empty(), Optional.empty()).objects().stream()
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
    if (!process.waitFor(30, java.util.concurrent.TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new AssertionError(String.join(" ", command) + " did not end within 30 s");
    }
    return process.exitValue();
  }
}
