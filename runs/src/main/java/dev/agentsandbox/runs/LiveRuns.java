package dev.agentsandbox.runs;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The runs this control plane holds in memory: the live ones, and the most recent ended ones with
 * full detail (bounded). Retiring a run moves it across and releases its slot. Thread-safe.
 */
final class LiveRuns {
  private final Map<String, LiveRun> live = new ConcurrentHashMap<>();
  private final Map<String, LiveRun> finished;

  LiveRuns(int finishedKept) {
    this.finished = boundedMap(finishedKept);
  }

  void add(LiveRun run) {
    live.put(run.runId(), run);
  }

  /** Forgets a run that never reached its lifecycle. */
  void remove(LiveRun run) {
    live.remove(run.runId());
  }

  Optional<LiveRun> live(String runId) {
    return Optional.ofNullable(live.get(runId));
  }

  /** A live run, or an ended one still held with full detail. */
  Optional<LiveRun> held(String runId) {
    LiveRun run = live.get(runId);
    if (run == null) {
      synchronized (finished) {
        run = finished.get(runId);
      }
    }
    return Optional.ofNullable(run);
  }

  void retire(LiveRun run) {
    synchronized (finished) {
      finished.put(run.runId(), run);
    }
    live.remove(run.runId());
    run.slot.release();
  }

  Set<String> liveIds() {
    return Set.copyOf(live.keySet());
  }

  /** Where each live run is, by run id. */
  Map<String, String> statuses() {
    Map<String, String> out = new LinkedHashMap<>();
    live.forEach((id, run) -> out.put(id, run.record().status().wireName()));
    return out;
  }

  /** Asks every live run to stop and waits up to {@code wait} for them to end. */
  void stopAll(Duration wait, Clock clock) throws InterruptedException {
    List<LiveRun> running = new ArrayList<>(live.values());
    running.forEach(LiveRun::kill);
    Instant deadline = clock.instant().plus(wait);
    for (LiveRun run : running) {
      Duration left = Duration.between(clock.instant(), deadline);
      if (left.isNegative()) {
        break;
      }
      try {
        run.done.get(left.toMillis(), TimeUnit.MILLISECONDS);
      } catch (ExecutionException | TimeoutException e) {
        // What did not end in time is recovered and reaped at the next start.
      }
    }
  }

  /** An insertion-ordered map that forgets its eldest entry beyond {@code max}; not thread-safe. */
  private static <K, V> Map<K, V> boundedMap(int max) {
    return new LinkedHashMap<>() {
      private static final long serialVersionUID = 1L;

      @Override
      protected boolean removeEldestEntry(Map.Entry<K, V> eldest) {
        return size() > max;
      }
    };
  }
}
