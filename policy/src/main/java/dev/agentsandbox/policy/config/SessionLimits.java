package dev.agentsandbox.policy.config;

/**
 * How much one operation on an agent's sessions may carry (docs/api.md, "Sessions"): the most bytes
 * a file put or get moves, and the most a step reads on its standard input. Raising either is a
 * loosening, lowering one a tightening ({@link Loosenings}).
 *
 * @param maxFileBytes the most bytes one {@code PUT} or {@code GET .../files} carries (a file, a
 *     folder's files, an archive), from 0 to {@value #MAX_FILE_BYTES}
 * @param maxStdinBytes the most bytes of {@code stdin} one step takes, from 0 to {@value
 *     #MAX_STDIN_BYTES} (the API's body limit)
 */
public record SessionLimits(long maxFileBytes, int maxStdinBytes) {
  /** The highest file cap a document may set: 1 GiB. */
  public static final long MAX_FILE_BYTES = 1L << 30;

  /** The highest stdin cap a document may set: 1 MiB, the API's JSON body limit. */
  public static final int MAX_STDIN_BYTES = 1 << 20;

  /** What an agent gets when its configuration says nothing: 64 MiB files, 256 KiB of stdin. */
  public static final SessionLimits DEFAULT = new SessionLimits(64L << 20, 256 << 10);

  public SessionLimits {
    if (maxFileBytes < 0 || maxFileBytes > MAX_FILE_BYTES) {
      throw new IllegalArgumentException("sessions.max_file_bytes out of range: " + maxFileBytes);
    }
    if (maxStdinBytes < 0 || maxStdinBytes > MAX_STDIN_BYTES) {
      throw new IllegalArgumentException("sessions.max_stdin_bytes out of range: " + maxStdinBytes);
    }
  }
}
