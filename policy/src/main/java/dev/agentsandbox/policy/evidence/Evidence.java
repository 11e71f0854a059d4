package dev.agentsandbox.policy.evidence;

import java.time.Instant;
import java.util.List;
import java.util.Objects;

/**
 * What the record holds for one proposal or impact line: how many decisions, in how many runs, when
 * first and last, and a few of the runs to look at.
 *
 * @param count decisions (refusals, or allowed first connections), aggregated rows by their count
 * @param runs distinct runs they came from
 * @param firstSeen the earliest
 * @param lastSeen the latest
 * @param exampleRuns up to {@link #MAX_EXAMPLES} run ids, the most recent first
 */
public record Evidence(
    long count, int runs, Instant firstSeen, Instant lastSeen, List<String> exampleRuns) {
  /** How many example runs a line names. */
  public static final int MAX_EXAMPLES = 5;

  public Evidence {
    Objects.requireNonNull(firstSeen, "firstSeen");
    Objects.requireNonNull(lastSeen, "lastSeen");
    exampleRuns = List.copyOf(exampleRuns);
    if (exampleRuns.size() > MAX_EXAMPLES) {
      throw new IllegalArgumentException("at most " + MAX_EXAMPLES + " example runs");
    }
  }
}
