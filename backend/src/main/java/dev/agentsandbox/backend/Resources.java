package dev.agentsandbox.backend;

/**
 * Resource caps for one sandbox's workload.
 *
 * @param cpus CPU cores (fractions allowed)
 * @param memoryMb memory in MiB, swap included
 * @param pids the most processes and threads the workload may hold at once
 */
public record Resources(double cpus, int memoryMb, int pids) {
  public Resources {
    if (!(cpus > 0)) {
      throw new IllegalArgumentException("cpus must be positive: " + cpus);
    }
    if (memoryMb <= 0) {
      throw new IllegalArgumentException("memoryMb must be positive: " + memoryMb);
    }
    if (pids <= 0) {
      throw new IllegalArgumentException("pids must be positive: " + pids);
    }
  }
}
