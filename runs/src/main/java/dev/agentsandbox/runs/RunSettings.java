package dev.agentsandbox.runs;

import java.time.Duration;
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
 * @param warmMaxIdle how long a warm sandbox waits for a run before it is discarded (and replaced)
 * @param spool the folder where a session's file operations are spooled whole (private files,
 *     deleted when the operation ends); the JVM's temporary folder unless the operator says
 */
public record RunSettings(
    String instanceId,
    int tailBytes,
    int decisionsKept,
    int maxConcurrentRuns,
    int finishedRunsKept,
    Duration warmMaxIdle,
    java.nio.file.Path spool) {
  /** How long a warm sandbox waits for its run when nothing else is said. */
  public static final Duration DEFAULT_WARM_MAX_IDLE = Duration.ofMinutes(10);

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
    Objects.requireNonNull(warmMaxIdle, "warmMaxIdle");
    if (warmMaxIdle.isNegative() || warmMaxIdle.isZero()) {
      throw new IllegalArgumentException("warmMaxIdle must be positive");
    }
    Objects.requireNonNull(spool, "spool");
  }

  /** The JVM's temporary folder, where session files are spooled unless the operator says. */
  public static java.nio.file.Path defaultSpool() {
    return java.nio.file.Path.of(System.getProperty("java.io.tmpdir"));
  }

  /** Settings spooling session files in the JVM's temporary folder. */
  public RunSettings(
      String instanceId,
      int tailBytes,
      int decisionsKept,
      int maxConcurrentRuns,
      int finishedRunsKept,
      Duration warmMaxIdle) {
    this(
        instanceId,
        tailBytes,
        decisionsKept,
        maxConcurrentRuns,
        finishedRunsKept,
        warmMaxIdle,
        defaultSpool());
  }

  /** Settings whose warm sandboxes idle for at most {@link #DEFAULT_WARM_MAX_IDLE}. */
  public RunSettings(
      String instanceId,
      int tailBytes,
      int decisionsKept,
      int maxConcurrentRuns,
      int finishedRunsKept) {
    this(
        instanceId,
        tailBytes,
        decisionsKept,
        maxConcurrentRuns,
        finishedRunsKept,
        DEFAULT_WARM_MAX_IDLE);
  }

  /** The same settings with another maximum idle time for warm sandboxes. */
  public RunSettings withWarmMaxIdle(Duration maxIdle) {
    return new RunSettings(
        instanceId, tailBytes, decisionsKept, maxConcurrentRuns, finishedRunsKept, maxIdle, spool);
  }

  /** The same settings spooling session files under {@code folder}. */
  public RunSettings withSpool(java.nio.file.Path folder) {
    return new RunSettings(
        instanceId,
        tailBytes,
        decisionsKept,
        maxConcurrentRuns,
        finishedRunsKept,
        warmMaxIdle,
        folder);
  }

  /** The defaults, for one control plane named {@code instanceId}. */
  public static RunSettings defaults(String instanceId) {
    return new RunSettings(instanceId, DEFAULT_TAIL_BYTES, 1000, 16, 256);
  }
}
