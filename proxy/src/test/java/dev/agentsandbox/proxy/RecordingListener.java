package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.event.DecisionRecord;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;
import org.awaitility.Awaitility;

/** Collects decisions in-process, as the control plane would. */
final class RecordingListener implements DecisionListener {
  private final List<DecisionRecord> records = new CopyOnWriteArrayList<>();

  @Override
  public void onDecision(DecisionRecord record) {
    records.add(record);
  }

  List<DecisionRecord> records() {
    return List.copyOf(records);
  }

  /** Waits (bounded) for a decision matching the predicate and returns it. */
  DecisionRecord await(Predicate<DecisionRecord> match) {
    return awaitAfter(0, match);
  }

  /** Like {@link #await} but only among decisions after the first {@code skip}. */
  DecisionRecord awaitAfter(int skip, Predicate<DecisionRecord> match) {
    return Awaitility.await("a matching decision")
        .atMost(Duration.ofSeconds(20))
        .until(
            () -> {
              List<DecisionRecord> now = List.copyOf(records);
              return now.subList(Math.min(skip, now.size()), now.size()).stream()
                  .filter(match)
                  .findFirst();
            },
            java.util.Optional::isPresent)
        .orElseThrow();
  }
}
