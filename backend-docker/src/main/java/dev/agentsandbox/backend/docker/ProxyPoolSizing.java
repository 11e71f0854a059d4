package dev.agentsandbox.backend.docker;

/**
 * The size of an automatic proxy pool ({@code serve}'s default): the fast path a host can afford.
 * Each standby is a running proxy (its container capped at the configured proxy memory, about 60
 * MiB resident when idle) and two networks, kept whether or not runs come; a small pool serves a
 * newcomer's first runs from a started proxy, and refills one standby at a time. Pure.
 *
 * <table>
 *   <caption>Standbys by the daemon host's memory</caption>
 *   <tr><th>host memory</th><th>standbys</th></tr>
 *   <tr><td>under {@value #ONE_FROM_GIB} GiB</td><td>0: every run starts its own proxy</td></tr>
 *   <tr><td>{@value #ONE_FROM_GIB} GiB to under {@value #TWO_FROM_GIB} GiB</td><td>1</td></tr>
 *   <tr><td>{@value #TWO_FROM_GIB} GiB or more</td><td>2</td></tr>
 * </table>
 *
 * <p>At 2 standbys of the default 256 MiB cap the pool may hold 512 MiB, at most 6 % of an 8 GiB
 * host; an operator who wants more (or none) says {@code --docker-proxy-pool N}.
 */
final class ProxyPoolSizing {
  /** From this much memory (GiB) the pool keeps one standby. */
  static final int ONE_FROM_GIB = 4;

  /** From this much memory (GiB) the pool keeps two standbys. */
  static final int TWO_FROM_GIB = 8;

  private static final long GIB = 1L << 30;

  private ProxyPoolSizing() {}

  /**
   * The automatic pool's size for a host with {@code memoryBytes} of memory (the daemon's {@code
   * MemTotal}); a host that reports none (0 or less) gets no pool.
   */
  static int forHostMemory(long memoryBytes) {
    if (memoryBytes >= TWO_FROM_GIB * GIB) {
      return 2;
    }
    if (memoryBytes >= ONE_FROM_GIB * GIB) {
      return 1;
    }
    return 0;
  }

  /** Why an automatic pool has the size it has, for {@code serve}'s start lines and the probe. */
  static String explain(int size, long memoryBytes) {
    return size
        + (size == 1 ? " standby" : " standbys")
        + " (automatic, for "
        + String.format(java.util.Locale.ROOT, "%.1f", memoryBytes / (double) GIB)
        + " GiB of host memory; --docker-proxy-pool N to change)";
  }
}
