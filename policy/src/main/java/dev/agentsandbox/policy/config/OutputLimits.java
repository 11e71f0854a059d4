package dev.agentsandbox.policy.config;

/**
 * How much of a run's {@code /workspace/out} is kept for review: what fits is kept, the rest named
 * as dropped.
 *
 * @param maxBytes the most bytes kept, from 0 (keep nothing) to {@value #MAX_BYTES}
 * @param maxFiles the most files kept, from 0 to {@value #MAX_FILES}
 */
public record OutputLimits(long maxBytes, int maxFiles) {
  /** The highest byte cap a document may set: 1 GiB. */
  public static final long MAX_BYTES = 1L << 30;

  /** The highest file cap a document may set. */
  public static final int MAX_FILES = 10_000;

  /** What an agent gets when its configuration names no caps: 16 MiB in at most 100 files. */
  public static final OutputLimits DEFAULT = new OutputLimits(16L << 20, 100);

  public OutputLimits {
    if (maxBytes < 0 || maxBytes > MAX_BYTES) {
      throw new IllegalArgumentException("outputs.max_bytes out of range: " + maxBytes);
    }
    if (maxFiles < 0 || maxFiles > MAX_FILES) {
      throw new IllegalArgumentException("outputs.max_files out of range: " + maxFiles);
    }
  }
}
