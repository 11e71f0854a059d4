package dev.agentsandbox.policy.evidence;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;

/** Accumulates {@link Evidence}: counts, distinct runs, first and last. Not thread-safe. */
final class EvidenceTally {
  private long count;
  private Instant first;
  private Instant last;
  private final Map<String, Instant> latestByRun = new HashMap<>();

  void add(EgressObservation observation) {
    add(observation.runId(), observation.count(), observation.first(), observation.last());
  }

  void add(String runId, long more, Instant from, Instant to) {
    count = saturatedAdd(count, more);
    first = first == null || from.isBefore(first) ? from : first;
    last = last == null || to.isAfter(last) ? to : last;
    if (runId != null) {
      latestByRun.merge(runId, to, (a, b) -> a.isAfter(b) ? a : b);
    }
  }

  void addAll(EvidenceTally other) {
    count = saturatedAdd(count, other.count);
    if (other.first != null) {
      first = first == null || other.first.isBefore(first) ? other.first : first;
      last = last == null || other.last.isAfter(last) ? other.last : last;
    }
    other.latestByRun.forEach(
        (run, at) -> latestByRun.merge(run, at, (a, b) -> a.isAfter(b) ? a : b));
  }

  long count() {
    return count;
  }

  int runs() {
    return latestByRun.size();
  }

  Evidence evidence() {
    if (first == null) {
      throw new IllegalStateException("no observation was tallied");
    }
    // The most recent few runs, without sorting them all: a bounded heap, oldest on top.
    Comparator<Map.Entry<String, Instant>> recentFirst =
        Map.Entry.<String, Instant>comparingByValue(Comparator.reverseOrder())
            .thenComparing(Map.Entry.comparingByKey());
    PriorityQueue<Map.Entry<String, Instant>> recent =
        new PriorityQueue<>(Evidence.MAX_EXAMPLES + 1, recentFirst.reversed());
    for (Map.Entry<String, Instant> run : latestByRun.entrySet()) {
      recent.add(run);
      if (recent.size() > Evidence.MAX_EXAMPLES) {
        recent.poll();
      }
    }
    List<Map.Entry<String, Instant>> examples = new ArrayList<>(recent);
    examples.sort(recentFirst);
    return new Evidence(
        count, latestByRun.size(), first, last, examples.stream().map(Map.Entry::getKey).toList());
  }

  private static long saturatedAdd(long a, long b) {
    long sum = a + b;
    return sum < 0 ? Long.MAX_VALUE : sum;
  }
}
