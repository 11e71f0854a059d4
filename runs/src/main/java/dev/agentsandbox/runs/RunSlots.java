package dev.agentsandbox.runs;

import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The control plane's run slots: a run takes one at admission, atomically, and gives it back once,
 * whichever way it ends (refused after reservation, launch row failed, run retired). Checking the
 * count and adding the run later would let concurrent requests pass the same check. Thread-safe.
 */
final class RunSlots {
  private final int max;
  private final AtomicInteger taken = new AtomicInteger();

  RunSlots(int max) {
    if (max < 1) {
      throw new IllegalArgumentException("at least one run slot is needed: " + max);
    }
    this.max = max;
  }

  /** A slot, or empty when all {@code max} are taken. */
  Optional<Slot> tryTake() {
    while (true) {
      int now = taken.get();
      if (now >= max) {
        return Optional.empty();
      }
      if (taken.compareAndSet(now, now + 1)) {
        return Optional.of(new Slot());
      }
    }
  }

  /** How many slots are taken now. */
  int taken() {
    return taken.get();
  }

  /** One taken slot; releasing it twice releases it once. */
  final class Slot {
    private final AtomicBoolean released = new AtomicBoolean();

    private Slot() {}

    void release() {
      if (released.compareAndSet(false, true)) {
        taken.decrementAndGet();
      }
    }
  }
}
