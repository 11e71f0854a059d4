package dev.agentsandbox.policy.config;

/**
 * Resource limits of one agent's sandbox.
 *
 * <p>Bounds: {@code cpus} from {@value #MIN_CPUS} to {@value #MAX_CPUS}, {@code memory_mb} from
 * {@value #MIN_MEMORY_MB} to {@value #MAX_MEMORY_MB}, {@code pids} from {@value #MIN_PIDS} to
 * {@value #MAX_PIDS}.
 *
 * @param cpus CPU cores (fractions allowed)
 * @param memoryMb memory limit in MiB
 * @param pids process (task) limit
 */
public record Resources(double cpus, int memoryMb, int pids) {
  public static final double MIN_CPUS = 0.1;
  public static final double MAX_CPUS = 8;
  public static final int MIN_MEMORY_MB = 64;
  public static final int MAX_MEMORY_MB = 16384;
  public static final int MIN_PIDS = 16;
  public static final int MAX_PIDS = 4096;

  /** What an agent gets when its configuration names no resources. */
  public static final Resources DEFAULT = new Resources(1, 512, 256);

  public Resources {
    if (!(cpus >= MIN_CPUS && cpus <= MAX_CPUS)) {
      throw new IllegalArgumentException("cpus out of range: " + cpus);
    }
    if (memoryMb < MIN_MEMORY_MB || memoryMb > MAX_MEMORY_MB) {
      throw new IllegalArgumentException("memory_mb out of range: " + memoryMb);
    }
    if (pids < MIN_PIDS || pids > MAX_PIDS) {
      throw new IllegalArgumentException("pids out of range: " + pids);
    }
  }
}
