package dev.agentsandbox.backend.docker;

import static dev.agentsandbox.backend.docker.DockerItSupport.SUITE;
import static dev.agentsandbox.testing.ItRuns.noEgress;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.testing.RecordingListener;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A warm Docker sandbox under each runtime the daemon has: prepared with an idle workload, handed
 * over once (its command's output, exit status, environment and credentials are the run's), never a
 * second time, killed and timed out like a run of its own, and nothing left after. Its run ids
 * start with {@code wm} so the other Docker ITs' clean-up never takes its sandboxes.
 */
class WarmDockerSandboxIT {
  private static final String AGENT = "warm-it";
  private static DockerClient client;
  private static DockerBackend backend;

  @BeforeAll
  static void daemon() {
    client = DockerItSupport.requireDaemon();
    backend = new DockerBackend(client, DockerBackendConfig.defaults());
  }

  @AfterAll
  static void nothingLeft() {
    new DockerReaper(client).reap(Instant.now(), runId -> !runId.startsWith("wm"));
    assertThat(ours()).as("labelled objects of this test's agent").isEmpty();
  }

  static List<String> runtimes() {
    return DockerItSupport.runtimes();
  }

  private static String runId() {
    return "wm" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
  }

  private static RunSpec template(String runId, Duration ttl) {
    return new RunSpec(
        runId,
        AGENT,
        DockerItSupport.WORKLOAD_IMAGE,
        List.of("<handed over>"),
        Map.of(),
        noEgress(),
        SUITE.smallCaps(),
        ttl,
        Instant.now().plus(Duration.ofMinutes(30)),
        false);
  }

  private static RunSpec run(RunSpec template, List<String> command, Map<String, String> env) {
    return new RunSpec(
        template.runId(),
        template.agent(),
        template.image(),
        command,
        env,
        template.egress(),
        template.resources(),
        template.ttl(),
        template.expiresAt(),
        template.requireRuntimeClass());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("runtimes")
  void aWarmSandboxRunsItsOneRunsCommandWithItsEnvironmentAndCredentials(String runtime)
      throws Exception {
    RunSpec template = template(runId(), Duration.ofMinutes(2));
    WarmDockerSandbox warm =
        backend.prepare(template, Instant.now().plus(Duration.ofMinutes(5)), runtime);
    try {
      // Prepared: the proxy and the idle workload run, and nothing of a run is there yet; the
      // proxy holds the prepared policy (none here) and refuses what it does not allow, so that
      // anything in the idle container reaches nothing before its run.
      DockerItSupport.ExecResult idle =
          DockerItSupport.exec(
              client,
              warm.base().workloadContainerId(),
              "ls /run/agent-sandbox/credentials | wc -l; echo \"task=$TASK\";"
                  + " curl -sS -m 20 -o /dev/null -w 'denied=%{http_code}' http://denied.test/");
      assertThat(idle.output()).contains("0").contains("task=\n").contains("denied=403");

      // The run contract, as a cold run gets it: credentials as 0400 files of the workload's uid
      // (and, when asked, in the environment), the run id in the environment, /workspace/out
      // collected, the image's content id for the timeline.
      RunSpec spec =
          run(
                  template,
                  List.of(
                      "sh",
                      "-c",
                      "echo \"task=$TASK proxy=$HTTPS_PROXY run=$AGENT_SANDBOX_RUN_ID\"; cat"
                          + " /run/agent-sandbox/credentials/token; echo; id -u;"
                          + " stat -c 'mode=%a owner=%u' /run/agent-sandbox/credentials/token;"
                          + " echo \"envlen=${#TOKEN_ENV}\"; echo made > /workspace/out/r.txt;"
                          + " sleep 2; exit 7"),
                  Map.of("TASK", "t-42"))
              .withCredentials(
                  List.of(
                      new RunCredential(
                          "token",
                          "s3cr3t-value",
                          Optional.of("TOKEN_ENV"),
                          Instant.now().plusSeconds(600))));
      RecordingListener listener = new RecordingListener();
      Completion completion;
      Map<String, String> outFiles = new HashMap<>();
      Optional<String> imageId;
      String inspected;
      try (Sandbox sandbox = warm.handOver(spec, listener)) {
        assertThat(sandbox.runtime()).isEqualTo(runtime);
        // While the command runs, nothing the daemon shows of the container or of the command
        // started in it holds the run's environment or credential values: they went in through
        // the exec's environment and the proxy's mount, neither of which inspect reports.
        ObjectMapper json = new ObjectMapper();
        var container = client.inspectContainerCmd(warm.base().workloadContainerId()).exec();
        StringBuilder seen = new StringBuilder(json.writeValueAsString(container));
        List<String> execs = Optional.ofNullable(container.getExecIds()).orElse(List.of());
        for (String execId : execs) {
          seen.append(json.writeValueAsString(client.inspectExecCmd(execId).exec()));
        }
        assertThat(execs).as("the run's command, started in the container").isNotEmpty();
        inspected = seen.toString();
        completion = sandbox.await(Instant.now().plus(Duration.ofMinutes(2)));
        imageId = sandbox.imageId();
        try (InputStream outputs = sandbox.outputs().orElseThrow();
            TarArchiveInputStream tar = new TarArchiveInputStream(outputs)) {
          for (TarArchiveEntry e = tar.getNextEntry(); e != null; e = tar.getNextEntry()) {
            if (e.isFile()) {
              outFiles.put(e.getName(), new String(tar.readAllBytes(), StandardCharsets.UTF_8));
            }
          }
        }
      }

      assertThat(completion.end()).as(completion.detail()).isEqualTo(Completion.End.EXIT);
      assertThat(completion.exitStatus()).hasValue(7);
      assertThat(listener.output())
          .contains("task=t-42 proxy=http://")
          .contains("run=" + template.runId())
          .contains("s3cr3t-value")
          .contains("65534")
          .contains("mode=400 owner=65534")
          .contains("envlen=12");
      assertThat(inspected)
          .contains("AGENT_SANDBOX_RUN_ID=" + template.runId())
          .contains("/workspace/out/r.txt")
          .doesNotContain("s3cr3t-value")
          .doesNotContain("t-42");
      assertThat(outFiles).containsEntry("out/r.txt", "made\n");
      assertThat(imageId).hasValueSatisfying(id -> assertThat(id).startsWith("sha256:"));
      // Served once: a second hand-over, even with a valid spec, is refused.
      assertThatThrownBy(() -> warm.handOver(spec, SandboxListener.NONE))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("already used");
      assertThat(ours()).isEmpty();
    } finally {
      warm.discard();
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("runtimes")
  void aHandedOverRunIsKilledAndTimedOutLikeAnyOtherAndLeavesNothing(String runtime)
      throws Exception {
    RunSpec killedTemplate = template(runId(), Duration.ofMinutes(2));
    WarmDockerSandbox killed =
        backend.prepare(killedTemplate, Instant.now().plus(Duration.ofMinutes(5)), runtime);
    RunSpec timedTemplate = template(runId(), Duration.ofMinutes(2));
    WarmDockerSandbox timed =
        backend.prepare(timedTemplate, Instant.now().plus(Duration.ofMinutes(5)), runtime);
    try {
      // Something the command leaves running in the background does not outlive the run.
      List<String> hang = List.of("sh", "-c", "sleep 600 & echo started; sleep 600");
      Completion kill;
      try (Sandbox sandbox =
          killed.handOver(run(killedTemplate, hang, Map.of()), SandboxListener.NONE)) {
        Thread.ofVirtual()
            .start(
                () -> {
                  try {
                    Thread.sleep(1000);
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                  sandbox.kill();
                });
        kill = sandbox.await(Instant.now().plus(Duration.ofMinutes(2)));
      }
      assertThat(kill.end()).as(kill.detail()).isEqualTo(Completion.End.KILLED);

      Completion deadline;
      try (Sandbox sandbox =
          timed.handOver(run(timedTemplate, hang, Map.of()), SandboxListener.NONE)) {
        deadline = sandbox.await(Instant.now().plus(Duration.ofSeconds(3)));
      }
      assertThat(deadline.end()).as(deadline.detail()).isEqualTo(Completion.End.DEADLINE);
      assertThat(ours()).isEmpty();
    } finally {
      killed.discard();
      timed.discard();
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("runtimes")
  void aDiscardedWarmSandboxIsGoneAndCannotBeHandedOver(String runtime) {
    RunSpec template = template(runId(), Duration.ofMinutes(2));
    WarmDockerSandbox warm =
        backend.prepare(template, Instant.now().plus(Duration.ofMinutes(5)), runtime);
    assertThat(ours()).isNotEmpty();

    warm.discard();

    assertThat(ours()).isEmpty();
    assertThatThrownBy(
            () -> warm.handOver(run(template, List.of("true"), Map.of()), SandboxListener.NONE))
        .isInstanceOf(IllegalStateException.class);
  }

  /** Containers, networks and volumes of this test's agent. */
  private static List<String> ours() {
    List<String> found = new ArrayList<>();
    String label = Labels.AGENT + "=" + AGENT;
    client
        .listContainersCmd()
        .withShowAll(true)
        .withLabelFilter(Map.of(Labels.AGENT, AGENT))
        .exec()
        .forEach(c -> found.add("container " + String.join(",", c.getNames())));
    client
        .listNetworksCmd()
        .withFilter("label", List.of(label))
        .exec()
        .forEach(n -> found.add("network " + n.getName()));
    var volumes = client.listVolumesCmd().withFilter("label", List.of(label)).exec().getVolumes();
    if (volumes != null) {
      volumes.forEach(v -> found.add("volume " + v.getName()));
    }
    return found;
  }
}
