package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.batch.v1.Job;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The runtime check the backend puts in front of the agent, run for real: the exact init container
 * of a generated Job (its image's busybox, its command, its user and hardening) on this host's
 * Docker engine, once under runsc and once under runc. It must pass under gVisor and fail with its
 * mismatch status under runc, or a RuntimeClass that leads to runc would go unnoticed.
 */
class RuntimeCheckIT {
  private static final String IMAGE = "agent-sandbox/proxy:dev";

  private static Container check() {
    KubernetesBackendConfig config = KubernetesBackendConfig.defaults(IMAGE, "agent-sandbox");
    Job job =
        new BundleFactory(config)
            .build(Specs.spec("rc1"), Optional.of("gvisor"), Optional.of("10.43.0.9"))
            .get(Job.class, BundleFactory.JOB);
    // The runtime check first; the collect sidecar after it.
    List<Container> init = job.getSpec().getTemplate().getSpec().getInitContainers();
    assertThat(init).hasSize(2);
    assertThat(init.get(1).getName()).isEqualTo(SandboxPods.COLLECT);
    return init.get(0);
  }

  private record Result(int exit, String output) {}

  private static Result run(String runtime, Container check)
      throws IOException, InterruptedException {
    List<String> command =
        new ArrayList<>(
            List.of(
                "docker",
                "run",
                "--rm",
                "--label",
                "agent-sandbox.test=k8s-runtime-check",
                "--runtime",
                runtime,
                "--network",
                "none",
                "--read-only",
                "--cap-drop",
                "ALL",
                "--security-opt",
                "no-new-privileges",
                "--user",
                "65532:65532",
                "--entrypoint",
                check.getCommand().get(0),
                check.getImage()));
    command.addAll(check.getCommand().subList(1, check.getCommand().size()));
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    if (!process.waitFor(120, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new AssertionError("docker run under " + runtime + " did not end within 120 s");
    }
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    return new Result(process.exitValue(), output);
  }

  @Test
  void theCheckPassesUnderGvisorAndFailsUnderRunc() throws Exception {
    Container check = check();
    assertThat(check.getName()).isEqualTo(SandboxPods.RUNTIME_CHECK);
    assertThat(check.getSecurityContext().getRunAsNonRoot()).isTrue();

    Result gvisor = run("runsc", check);
    assertThat(gvisor.exit()).as(gvisor.output()).isZero();
    assertThat(gvisor.output()).contains("agent-sandbox runtime check: gVisor");

    Result runc = run("runc", check);
    assertThat(runc.exit()).as(runc.output()).isEqualTo(SandboxPods.RUNTIME_MISMATCH_EXIT);
    assertThat(runc.output()).contains("does not run under gVisor");
  }
}
