package dev.agentsandbox.backend.docker;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.backend.SandboxListener;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * A standby's refusals before any policy are nobody's: they never reach the run that takes it,
 * neither those kept before the hand-over nor those still on their way; a warm sandbox's kept
 * decisions (under the run's own policy) are the run's.
 */
class HandOverListenerTest {
  /** Lines as the proxy writes them (copied from a standby's and a run's proxy). */
  private static final String PENDING =
      "{\"time\":\"2026-12-01T16:55:42.718802966Z\",\"run_id\":\"\",\"client\":\"10.214.0.3:49762\","
          + "\"method\":\"GET\",\"host\":\"\",\"port\":0,\"decision\":\"deny\","
          + "\"reason\":\"policy-pending\",\"address\":null,\"bytes_up\":0,\"bytes_down\":0,"
          + "\"duration_ms\":0,\"first\":false,\"end\":null,\"detail\":\"this proxy has no policy yet\"}";

  private static final String RUNS =
      "{\"time\":\"2026-12-01T16:55:44.266195033Z\",\"run_id\":\"r1\",\"client\":\"10.214.0.3:49770\","
          + "\"method\":\"GET\",\"host\":\"mine.test\",\"port\":80,\"decision\":\"deny\","
          + "\"reason\":\"not-allowed\",\"address\":null,\"bytes_up\":0,\"bytes_down\":0,"
          + "\"duration_ms\":0,\"first\":false,\"end\":null,\"detail\":\"the host is not on the allow-list\"}";

  private static final class Recorder implements SandboxListener {
    final List<String> decisions = new CopyOnWriteArrayList<>();

    @Override
    public void onOutput(byte[] chunk) {}

    @Override
    public void onEgressDecision(String jsonLine) {
      decisions.add(jsonLine);
    }
  }

  @Test
  void aStandbysPrePolicyRefusalsNeverReachTheRunThatTakesIt() {
    HandOverListener standby = new HandOverListener();
    for (int i = 0; i < 5; i++) {
      standby.onEgressDecision(PENDING);
    }
    Recorder run = new Recorder();
    assertThat(standby.handOverDroppingPrePolicy(run)).isEqualTo(5);
    standby.onEgressDecision(PENDING); // one still on its way from before the policy
    standby.onEgressDecision(RUNS);
    assertThat(run.decisions).containsExactly(RUNS);
    assertThat(standby.droppedPrePolicy()).isEqualTo(6);
  }

  @Test
  void aWarmSandboxsKeptDecisionsAreTheRunsAndComeFirst() {
    HandOverListener warm = new HandOverListener();
    warm.onEgressDecision(RUNS);
    Recorder run = new Recorder();
    warm.handOver(run);
    warm.onEgressDecision(PENDING);
    assertThat(run.decisions).containsExactly(RUNS, PENDING);
  }

  @Test
  void aLineThatIsNotJsonIsPassedOnForTheRecorderToJudge() {
    assertThat(HandOverListener.prePolicy("not json")).isFalse();
    assertThat(HandOverListener.prePolicy("{\"reason\": \"policy-pending\"}"))
        .as("not a whole decision: the recorder judges it")
        .isFalse();
    assertThat(HandOverListener.prePolicy(PENDING)).isTrue();
    assertThat(HandOverListener.prePolicy(RUNS)).isFalse();
  }
}
