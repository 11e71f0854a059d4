package dev.agentsandbox.backend.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.model.Frame;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.RunEgress;
import dev.agentsandbox.testing.HostDrill;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * What the Docker ITs share: the daemon, the images, specs, exec inside a sandbox, label checks.
 */
final class DockerItSupport {
  static final String WORKLOAD_IMAGE = "agent-sandbox/workload:dev";

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

  static String newRunId() {
    return "it" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
  }

  static RunSpec spec(
      String runId, List<String> command, RunEgress egress, Resources resources, Duration ttl) {
    return new RunSpec(
        runId,
        "it-agent",
        WORKLOAD_IMAGE,
        command,
        Map.of(),
        egress,
        resources,
        ttl,
        Instant.now().plus(Duration.ofMinutes(30)),
        false);
  }

  static RunEgress noEgress() {
    return new RunEgress(AllowList.EMPTY, Optional.empty(), List.of(), Map.of());
  }

  static Resources smallCaps() {
    return new Resources(1, 256, 128);
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
    List<String> found = new ArrayList<>();
    client
        .listContainersCmd()
        .withShowAll(true)
        .withLabelFilter(Map.of(Labels.MANAGED_BY, Labels.MANAGER))
        .exec()
        .stream()
        .filter(c -> isTestRun(c.getLabels()))
        .forEach(c -> found.add("container " + String.join(",", c.getNames())));
    client
        .listNetworksCmd()
        .withFilter("label", List.of(Labels.MANAGED_BY + "=" + Labels.MANAGER))
        .exec()
        .stream()
        .filter(n -> isTestRun(n.getLabels()))
        .forEach(n -> found.add("network " + n.getName()));
    List<com.github.dockerjava.api.command.InspectVolumeResponse> volumes =
        client
            .listVolumesCmd()
            .withFilter("label", List.of(Labels.MANAGED_BY + "=" + Labels.MANAGER))
            .exec()
            .getVolumes();
    if (volumes != null) {
      volumes.stream()
          .filter(v -> isTestRun(v.getLabels()))
          .forEach(v -> found.add("volume " + v.getName()));
    }
    return found;
  }

  private static boolean isTestRun(Map<String, String> labels) {
    return labels != null && labels.getOrDefault(Labels.RUN_ID, "").startsWith("it");
  }

  /** Removes whatever the tests left (by label) and asserts that nothing labelled remains. */
  static void cleanUpAndAssertNothingLeft(DockerClient client) {
    new DockerReaper(client).reap(Instant.now(), runId -> !runId.startsWith("it"));
    assertThat(labelledResources(client))
        .as("labelled containers and networks left behind")
        .isEmpty();
  }

  /** Records what a sandbox produced. */
  static final class RecordingListener implements SandboxListener {
    private final ByteArrayOutputStream output = new ByteArrayOutputStream();
    final List<String> decisions = new CopyOnWriteArrayList<>();

    @Override
    public void onOutput(byte[] chunk) {
      synchronized (output) {
        output.writeBytes(chunk);
      }
    }

    @Override
    public void onEgressDecision(String jsonLine) {
      decisions.add(jsonLine);
    }

    String output() {
      synchronized (output) {
        return output.toString(StandardCharsets.UTF_8);
      }
    }
  }
}
