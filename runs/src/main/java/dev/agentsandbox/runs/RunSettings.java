package dev.agentsandbox.runs;

import java.util.Objects;

/**
 * How the run service behaves, set by the operator at start-up.
 *
 * @param instanceId this control plane's identity in the runs table (a replica's pod name, or the
 *     host name); runs it owned and left live are recovered at its next start
 * @param tailBytes how much redacted output a run's result keeps (64 KiB by default)
 * @param decisionsKept how many egress decisions a run's result lists (all are audited regardless
 *     of the limit when they are refusals or first allows)
 * @param maxConcurrentRuns most runs live at once on this control plane
 * @param finishedRunsKept how many ended runs are kept in memory with full detail
 */
public record RunSettings(
    String instanceId,
    int tailBytes,
    int decisionsKept,
    int maxConcurrentRuns,
    int finishedRunsKept) {
  /** The tail kept when nothing else is said. */
  public static final int DEFAULT_TAIL_BYTES = 64 * 1024;

  public RunSettings {
    Objects.requireNonNull(instanceId, "instanceId");
    if (tailBytes < 1024) {
      throw new IllegalArgumentException("tailBytes must be at least 1024");
    }
    if (decisionsKept < 0 || maxConcurrentRuns < 1 || finishedRunsKept < 0) {
      throw new IllegalArgumentException("limits must be positive");
    }
  }

  /** The defaults, for one control plane named {@code instanceId}. */
  public static RunSettings defaults(String instanceId) {
    return new RunSettings(instanceId, DEFAULT_TAIL_BYTES, 1000, 16, 256);
  }
}
