package dev.agentsandbox.proxy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;

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
  DecisionRecord await(Predicate<DecisionRecord> match) throws InterruptedException {
    return awaitAfter(0, match);
  }

  /** Like {@link #await} but only among decisions after the first {@code skip}. */
  DecisionRecord awaitAfter(int skip, Predicate<DecisionRecord> match) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (System.nanoTime() < deadline) {
      List<DecisionRecord> now = List.copyOf(records);
      for (DecisionRecord record : now.subList(Math.min(skip, now.size()), now.size())) {
        if (match.test(record)) {
          return record;
        }
      }
      Thread.sleep(20);
    }
    throw new AssertionError("no matching decision within 20 s; got " + records);
  }
}
