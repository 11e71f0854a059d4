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
  private static final String PENDING =
      "{\"run_id\":\"\",\"host\":\"a.test\",\"decision\":\"deny\",\"reason\":\"policy-pending\"}";
  private static final String RUNS =
      "{\"run_id\":\"r1\",\"host\":\"a.test\",\"decision\":\"deny\",\"reason\":\"not-allowed\"}";

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
    assertThat(HandOverListener.prePolicy("{\"reason\": \"policy-pending\"}")).isTrue();
    assertThat(HandOverListener.prePolicy(RUNS)).isFalse();
  }
}
