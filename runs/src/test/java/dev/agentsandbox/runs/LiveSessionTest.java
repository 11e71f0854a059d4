package dev.agentsandbox.runs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.policy.config.SessionLimits;
import dev.agentsandbox.policy.event.DecisionRecord;
import dev.agentsandbox.policy.net.Reason;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * How a session waits for the proxy's decisions to reach past a step's end: a decision made after
 * it proves the stream passed it; one made before it (late, but the step's) does not; with none the
 * wait is bounded.
 */
class LiveSessionTest {
  private final Instant stepEnded = Instant.parse("2026-12-02T04:00:00Z");
  private final LiveSession session =
      new LiveSession(
          300, SessionLimits.DEFAULT, stepEnded.plusSeconds(3600), List.of(), Clock.systemUTC());

  @Test
  void aDecisionMadeAfterTheEndEndsTheWait() throws Exception {
    CompletableFuture<Boolean> waited =
        CompletableFuture.supplyAsync(() -> await(Duration.ofSeconds(30)));
    Thread.sleep(50);
    session.attribute(denial(stepEnded.plusMillis(1)));

    assertThat(waited.get(20, TimeUnit.SECONDS)).as("the stream passed the step's end").isTrue();
  }

  @Test
  void aLateDecisionMadeBeforeTheEndDoesNotEndTheWait() {
    session.attribute(denial(stepEnded));
    session.attribute(denial(stepEnded.minusMillis(5)));

    assertThat(await(Duration.ofMillis(50))).isFalse();
  }

  @Test
  void withNoDecisionTheWaitEndsAtItsBound() {
    assertThat(await(Duration.ofMillis(50))).isFalse();
  }

  @Test
  void aDecisionAlreadyPastTheEndAnswersAtOnce() {
    session.attribute(denial(stepEnded.plusSeconds(1)));

    assertThat(await(Duration.ZERO)).isTrue();
  }

  private boolean await(Duration settle) {
    try {
      return session.awaitDecisionsPast(stepEnded, settle);
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
  }

  private static DecisionRecord denial(Instant at) {
    return new DecisionRecord(
        at,
        "run",
        "172.30.0.2:40000",
        "CONNECT",
        "denied.test",
        443,
        false,
        Reason.NOT_ALLOWED,
        null,
        0,
        0,
        1,
        false,
        null,
        null);
  }
}
