package dev.agentsandbox.backend.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.model.Frame;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.testing.DockerObjects;
import dev.agentsandbox.testing.HostDrill;
import dev.agentsandbox.testing.ItRuns;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * What the Docker ITs share: the daemon, the images, specs, exec inside a sandbox, label checks.
 */
final class DockerItSupport {
  static final String WORKLOAD_IMAGE = "agent-sandbox/workload:dev";

  /**
   * This backend's ITs: run ids {@code it…}, the workload image, small caps of Resources(1, 256,
   * 128).
   */
  static final ItRuns.Suite SUITE =
      new ItRuns.Suite("it", WORKLOAD_IMAGE, new Resources(1, 256, 128));

  /**
   * The Docker tests' drill: its own links and upstream address, apart from the microVM tests'. The
   * host service listens on "::", dual-stack on Linux, so it answers on IPv4 and IPv6 alike.
   */
  static final HostDrill.Layout DRILL =
      new HostDrill.Layout("asb-up0", "asb-meta0", "198.18.77.1", "::");

  private DockerItSupport() {}

  static HostDrill startDrill() throws IOException, InterruptedException {
    return HostDrill.start(DRILL);
  }

  /** A client for the daemon, failing the test class clearly when none answers. */
  static DockerClient requireDaemon() {
    DockerClient client = DockerClients.fromEnvironment();
    Probe probe = new DockerBackend(client, DockerBackendConfig.defaults()).probe();
    if (!probe.available()) {
      fail(
          "The Docker ITs need a daemon: "
              + probe.detail()
              + " (scripts/services/docker.sh start)");
    }
    for (String image : List.of(WORKLOAD_IMAGE, DockerBackendConfig.DEFAULT_PROXY_IMAGE)) {
      try {
        client.inspectImageCmd(image).exec();
      } catch (RuntimeException e) {
        fail(
            "The Docker ITs need image "
                + image
                + ": "
                + DockerErrors.describe(e)
                + " (run images/build.sh)");
      }
    }
    return client;
  }

  /** runc always; runsc too when the daemon has it registered. */
  static List<String> runtimes() {
    DockerClient client = DockerClients.fromEnvironment();
    Probe probe = new DockerBackend(client, DockerBackendConfig.defaults()).probe();
    List<String> runtimes = new ArrayList<>(List.of("runc"));
    if (probe.available() && probe.isolation() == Isolation.GVISOR) {
      runtimes.add(probe.runtime());
    }
    return runtimes;
  }

  /** A launcher on {@code client} with its own subnet allocator, for tests that choose one. */
  static SandboxLauncher launcher(
      DockerClient client, DockerBackendConfig config, SubnetAllocator subnets) {
    return new SandboxLauncher(
        client,
        ((com.github.dockerjava.core.DockerClientImpl) client).getHttpClient(),
        config,
        subnets);
  }

  /** The outcome of a command run inside a container. */
  record ExecResult(long exitCode, String output) {}

  /** Runs {@code sh -c script} inside the container as its own user, bounded in time. */
  static ExecResult exec(DockerClient client, String containerId, String script)
      throws InterruptedException {
    String execId =
        client
            .execCreateCmd(containerId)
            .withCmd("sh", "-c", script)
            .withAttachStdout(true)
            .withAttachStderr(true)
            .exec()
            .getId();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ResultCallback.Adapter<Frame> callback =
        client
            .execStartCmd(execId)
            .exec(
                new ResultCallback.Adapter<Frame>() {
                  @Override
                  public void onNext(Frame frame) {
                    synchronized (out) {
                      out.writeBytes(frame.getPayload());
                    }
                  }
                });
    if (!callback.awaitCompletion(60, TimeUnit.SECONDS)) {
      fail("exec in " + containerId + " did not end within 60 s: " + script);
    }
    Long code = client.inspectExecCmd(execId).exec().getExitCodeLong();
    synchronized (out) {
      return new ExecResult(code == null ? -1 : code, out.toString(StandardCharsets.UTF_8));
    }
  }

  /** Starts {@code sh -c script} inside the container and does not wait for it. */
  static void startDetached(DockerClient client, String containerId, String script) {
    String execId = client.execCreateCmd(containerId).withCmd("sh", "-c", script).exec().getId();
    try {
      client
          .execStartCmd(execId)
          .withDetach(true)
          .exec(new ResultCallback.Adapter<Frame>())
          .close();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /**
   * Names of every container, network and volume carrying our managed-by label and a test run's id
   * (runs of a control plane sharing the daemon are not the tests' business).
   */
  static List<String> labelledResources(DockerClient client) {
    return DockerObjects.ofRunsStartingWith(client, SUITE.prefix());
  }

  /** Removes whatever the tests left (by label) and asserts that nothing labelled remains. */
  static void cleanUpAndAssertNothingLeft(DockerClient client) {
    new DockerReaper(client).reap(Instant.now(), runId -> !runId.startsWith(SUITE.prefix()));
    assertThat(labelledResources(client))
        .as("labelled containers and networks left behind")
        .isEmpty();
  }
}
