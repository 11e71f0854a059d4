package dev.agentsandbox.runs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.backend.session.WorkspacePath;
import dev.agentsandbox.policy.event.DecisionRecord;
import dev.agentsandbox.policy.net.Reason;
import dev.agentsandbox.policy.run.Redactor;
import dev.agentsandbox.runs.session.StepView;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class LiveStepTest {
  /**
   * A step's view is read while the proxy's decisions are still being attributed to it (the exec
   * answer is built as the step ends): its refusal count always matches the refusals it lists. One
   * streamed result once listed a refusal with {@code egress_denied} 0, the count and the list read
   * under two locks.
   */
  @Test
  void aViewNeverListsARefusalItsCountMisses() throws Exception {
    Instant until = Instant.now().plus(Duration.ofSeconds(2));
    int views = 0;
    for (int round = 0; round < 500 && Instant.now().isBefore(until); round++) {
      LiveStep step = step();
      Thread proxy =
          new Thread(
              () -> {
                for (int i = 0; i < LiveStep.MAX_DECISIONS; i++) {
                  step.addDecision(deny(step.startedAt, i));
                }
              });
      proxy.start();
      do {
        StepView view = step.view("run", Optional.empty(), null, null, null, "");
        List<Map<String, Object>> listed = view.output().orElseThrow().egress();
        long refusals = listed.stream().filter(d -> "deny".equals(d.get("decision"))).count();
        assertThat((long) view.egressDenied())
            .as("round %d: the refusal count of a view listing %d refusals", round, refusals)
            .isGreaterThanOrEqualTo(refusals);
        views++;
      } while (proxy.isAlive());
      proxy.join(10_000);
      StepView last = step.view("run", Optional.empty(), null, null, null, "");
      assertThat(last.egressDenied()).isEqualTo(LiveStep.MAX_DECISIONS);
      assertThat(last.output().orElseThrow().egress()).hasSize(LiveStep.MAX_DECISIONS);
    }
    assertThat(views).as("views read while decisions came").isPositive();
  }

  private static LiveStep step() {
    Instant started = Instant.now();
    return new LiveStep(
        1,
        "tester",
        List.of("true"),
        WorkspacePath.root(),
        false,
        60,
        0,
        started,
        started.plusSeconds(60),
        false,
        new RunOutput(new Redactor(List.of()), 1024),
        new RunOutput(new Redactor(List.of()), 1024),
        new RunOutput(new Redactor(List.of()), 1024));
  }

  private static DecisionRecord deny(Instant at, int port) {
    return new DecisionRecord(
        at,
        "run",
        "172.30.0.2:40000",
        "CONNECT",
        "denied.test",
        1000 + port,
        false,
        Reason.NOT_ALLOWED,
        null,
        0,
        0,
        1,
        false,
        null,
        "refused by the test");
  }
}
