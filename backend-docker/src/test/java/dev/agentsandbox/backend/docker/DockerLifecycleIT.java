package dev.agentsandbox.backend.docker;

import static dev.agentsandbox.backend.docker.DockerItSupport.SUITE;
import static dev.agentsandbox.backend.docker.DockerItSupport.cleanUpAndAssertNothingLeft;
import static dev.agentsandbox.backend.docker.DockerItSupport.exec;
import static dev.agentsandbox.backend.docker.DockerItSupport.labelledResources;
import static dev.agentsandbox.testing.ItRuns.noEgress;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.testing.RecordingListener;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** A run's life on a real daemon: exit, deadline, kill, caps, teardown and the reaper. */
class DockerLifecycleIT {
  private static DockerClient client;
  private static DockerBackend backend;

  @BeforeAll
  static void daemon() {
    client = DockerItSupport.requireDaemon();
    backend = new DockerBackend(client, DockerBackendConfig.defaults());
  }

  static List<String> runtimes() {
    return DockerItSupport.runtimes();
  }

  @AfterEach
  void nothingLabelledRemains() {
    cleanUpAndAssertNothingLeft(client);
  }

  /**
   * Holds a workload back until {@link #launch} has returned: under runsc a workload that exhausts
   * its pids cap at once kills the Sentry before Docker's start call returns, and the launch fails
   * instead of the run hitting its cap.
   */
  private static final String WAIT_FOR_GO =
      "i=0; while [ ! -e /tmp/go ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; ";

  private static Sandbox launch(RunSpec spec, SandboxListener listener, String runtime)
      throws InterruptedException {
    Sandbox sandbox = backend.launch(spec, listener, runtime);
    if (String.join(" ", spec.command()).contains("/tmp/go")) {
      try {
        DockerItSupport.startDetached(
            client, ((DockerSandbox) sandbox).workloadContainerId(), "touch /tmp/go");
      } catch (RuntimeException e) {
        // Under runsc the Sentry can die of the workload's cap before the gate opens; the run
        // has then ended already, which is what await reports.
      }
    }
    return sandbox;
  }

  @ParameterizedTest(name = "under {0}")
  @MethodSource("runtimes")
  void aWorkloadThatExitsReportsItsStatusAndOutputAndTeardownRemovesEverything(String runtime)
      throws Exception {
    RecordingListener listener = new RecordingListener();
    RunSpec spec =
        SUITE.spec(
            SUITE.newRunId(),
            List.of("sh", "-c", "echo hello from $(id -u); echo oops >&2; exit 3"),
            noEgress(),
            SUITE.smallCaps(),
            Duration.ofMinutes(2));
    Completion completion;
    try (Sandbox sandbox = launch(spec, listener, runtime)) {
      assertThat(sandbox.runtime()).isEqualTo(runtime);
      completion = sandbox.await(Instant.now().plusSeconds(60));
    }
    assertThat(completion.end()).isEqualTo(Completion.End.EXIT);
    assertThat(completion.exitStatus()).hasValue(3);
    assertThat(listener.output()).contains("hello from 65534").contains("oops");
    assertThat(labelledResources(client)).isEmpty();
  }

  @ParameterizedTest(name = "under {0}")
  @MethodSource("runtimes")
  void anInfiniteLoopDiesAtTheDeadline(String runtime) throws Exception {
    RunSpec spec =
        SUITE.spec(
            SUITE.newRunId(),
            List.of("sh", "-c", "while :; do :; done"),
            noEgress(),
            SUITE.smallCaps(),
            Duration.ofSeconds(3));
    try (Sandbox sandbox = launch(spec, SandboxListener.NONE, runtime)) {
      // The caller's deadline is later than the run's ttl: the ttl wins.
      Completion completion = sandbox.await(Instant.now().plusSeconds(120));
      assertThat(completion.end()).isEqualTo(Completion.End.DEADLINE);
      assertThat(completion.exitStatus()).hasValue(137);
    }
  }

  @ParameterizedTest(name = "under {0}")
  @MethodSource("runtimes")
  void killEndsTheRunAsKilledAndTeardownIsIdempotent(String runtime) throws Exception {
    RunSpec spec =
        SUITE.spec(
            SUITE.newRunId(),
            List.of("sleep", "600"),
            noEgress(),
            SUITE.smallCaps(),
            Duration.ofMinutes(5));
    Sandbox sandbox = launch(spec, SandboxListener.NONE, runtime);
    Thread killer = new Thread(sandbox::kill);
    killer.start();
    Completion completion = sandbox.await(Instant.now().plusSeconds(60));
    killer.join();
    assertThat(completion.end()).isEqualTo(Completion.End.KILLED);
    sandbox.teardown();
    assertThat(labelledResources(client)).isEmpty();
    sandbox.teardown();
    sandbox.kill();
    assertThat(labelledResources(client)).isEmpty();
  }

  @ParameterizedTest(name = "under {0}")
  @MethodSource("runtimes")
  void processesStopAtThePidsCap(String runtime) throws Exception {
    // Tries to hold 300 processes at once under a cap of 64. Under runc the kernel refuses the
    // forks past the cap; under runsc the cap bounds the Sentry's host threads, and when the guest
    // exhausts them the whole sandbox dies (exit 2) rather than the one fork failing.
    String script =
        WAIT_FOR_GO
            + "( n=0; while [ $n -lt 300 ]; do sleep 8 & n=$((n+1)); echo $n > /tmp/started; done )"
            + " 2>/dev/null; read n < /tmp/started; echo started=$n";
    RecordingListener listener = new RecordingListener();
    RunSpec spec =
        SUITE.spec(
            SUITE.newRunId(),
            List.of("sh", "-c", script),
            noEgress(),
            new Resources(1, 256, 64),
            Duration.ofSeconds(40));
    Completion completion;
    try (Sandbox sandbox = launch(spec, listener, runtime)) {
      completion = sandbox.await(Instant.now().plusSeconds(60));
    }
    assertThat(completion.end()).isEqualTo(Completion.End.EXIT);
    String output = listener.output();
    if (runtime.equals("runc")) {
      assertThat(output).contains("started=");
    }
    if (output.contains("started=")) {
      int started = Integer.parseInt(output.replaceAll("(?s).*started=(\\d+).*", "$1"));
      assertThat(started).as(output).isLessThan(64);
    } else {
      assertThat(completion.exitStatus().orElse(0)).as(completion.detail()).isNotZero();
    }
  }

  @ParameterizedTest(name = "under {0}")
  @MethodSource("runtimes")
  void aForkBombIsContainedAndEndsAtTheDeadline(String runtime) throws Exception {
    RunSpec spec =
        SUITE.spec(
            SUITE.newRunId(),
            List.of("sh", "-c", WAIT_FOR_GO + "f() { f | f & }; f; sleep 30"),
            noEgress(),
            new Resources(1, 256, 64),
            Duration.ofSeconds(8));
    try (Sandbox sandbox = launch(spec, SandboxListener.NONE, runtime)) {
      Completion completion = sandbox.await(Instant.now().plusSeconds(60));
      assertThat(completion.end()).isIn(Completion.End.DEADLINE, Completion.End.EXIT);
    }
    // The host is unharmed: the daemon still starts containers and this JVM still forks.
    assertThat(new ProcessBuilder("true").start().waitFor()).isZero();
    assertThat(client.pingCmd().exec()).isNull();
  }

  @ParameterizedTest(name = "under {0}")
  @MethodSource("runtimes")
  void aMemoryHogIsKilledAtItsCap(String runtime) throws Exception {
    // Doubles a string until it no longer fits: 2^31 bytes would be far above the 64 MiB cap.
    String hog = "awk 'BEGIN { s = \"x\"; for (i = 0; i < 31; i++) { s = s s }; print length(s) }'";
    RecordingListener listener = new RecordingListener();
    RunSpec spec =
        SUITE.spec(
            SUITE.newRunId(),
            List.of("sh", "-c", hog),
            noEgress(),
            new Resources(1, 64, 64),
            Duration.ofSeconds(60));
    try (Sandbox sandbox = launch(spec, listener, runtime)) {
      Completion completion = sandbox.await(Instant.now().plusSeconds(90));
      assertThat(completion.end()).as(completion.detail()).isEqualTo(Completion.End.EXIT);
      assertThat(completion.exitStatus().orElse(0)).as(completion.detail()).isNotZero();
    }
    assertThat(listener.output()).doesNotContain("2147483648");
  }

  @Test
  void aFailedLaunchLeavesNothingBehindAndSaysWhatFailed() {
    RunSpec spec =
        new RunSpec(
            SUITE.newRunId(),
            "it-agent",
            "agent-sandbox/no-such-image:never",
            List.of("true"),
            Map.of(),
            noEgress(),
            SUITE.smallCaps(),
            Duration.ofMinutes(1),
            Instant.now().plusSeconds(600),
            false);
    assertThatThrownBy(() -> backend.launch(spec, SandboxListener.NONE))
        .isInstanceOf(UnableToLaunchSandboxException.class)
        .hasMessageContaining("creating workload container asb-" + spec.runId() + "-agent")
        .hasMessageContaining("images/build.sh");
    assertThat(labelledResources(client)).isEmpty();
  }

  @Test
  void aRunThatRequiresGvisorIsRefusedUnderRunc() {
    RunSpec open =
        SUITE.spec(
            SUITE.newRunId(),
            List.of("true"),
            noEgress(),
            SUITE.smallCaps(),
            Duration.ofMinutes(1));
    RunSpec strict =
        new RunSpec(
            open.runId(),
            open.agent(),
            open.image(),
            open.command(),
            open.env(),
            open.egress(),
            open.resources(),
            open.ttl(),
            open.expiresAt(),
            true);
    assertThatThrownBy(() -> backend.launch(strict, SandboxListener.NONE, "runc"))
        .isInstanceOf(UnableToLaunchSandboxException.class)
        .hasMessageContaining("requires gVisor");
    assertThat(labelledResources(client)).isEmpty();
  }

  @Test
  void theReaperRemovesWhatACrashedControlPlaneLeftAndNothingElse() throws Exception {
    RunSpec orphan =
        SUITE.spec(
            SUITE.newRunId(),
            List.of("sleep", "600"),
            noEgress(),
            SUITE.smallCaps(),
            Duration.ofMinutes(5));
    RunSpec live =
        SUITE.spec(
            SUITE.newRunId(),
            List.of("sleep", "600"),
            noEgress(),
            SUITE.smallCaps(),
            Duration.ofMinutes(5));
    // Launched and forgotten, as when the control plane dies mid-run.
    backend.launch(orphan, SandboxListener.NONE, "runc");
    Sandbox kept = backend.launch(live, SandboxListener.NONE, "runc");
    String stranger =
        client
            .createNetworkCmd()
            .withName("asb-" + SUITE.newRunId() + "-stranger")
            .withLabels(Map.of(Labels.RUN_ID, orphan.runId()))
            .exec()
            .getId();
    try {
      var report = backend.reap(Instant.now(), runId -> runId.equals(live.runId()));
      assertThat(report.removedRunIds()).contains(orphan.runId()).doesNotContain(live.runId());
      assertThat(report.problems()).isEmpty();
      assertThat(labelledResources(client)).allMatch(name -> name.contains(live.runId()));
      assertThat(exec(client, ((DockerSandbox) kept).workloadContainerId(), "echo alive").output())
          .contains("alive");
      // An expired run goes even when the control plane still calls it live.
      var expired = backend.reap(Instant.now().plus(Duration.ofHours(1)), runId -> true);
      assertThat(expired.removedRunIds()).contains(live.runId());
      // Without our managed-by label nothing is touched, whatever its other labels say.
      assertThat(client.inspectNetworkCmd().withNetworkId(stranger).exec().getId())
          .isEqualTo(stranger);
    } finally {
      kept.teardown();
      client.removeNetworkCmd(stranger).exec();
    }
  }
}
