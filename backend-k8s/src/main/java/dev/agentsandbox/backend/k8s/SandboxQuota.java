package dev.agentsandbox.backend.k8s;

/**
 * What one sandbox namespace may hold beyond the agent's own caps: the proxy's resources, the
 * ephemeral storage of each pod, and the container defaults a LimitRange supplies.
 *
 * @param proxyCpuMillis the proxy pod's CPU, in millicores
 * @param proxyMemoryMb the proxy pod's memory, in MiB
 * @param ephemeralStorageMb scratch space per pod (its writable directories and logs), in MiB
 */
public record SandboxQuota(int proxyCpuMillis, int proxyMemoryMb, int ephemeralStorageMb) {
  /** Enough for the proxy's JVM and a modest build's scratch space. */
  public static final SandboxQuota DEFAULT = new SandboxQuota(250, 256, 1024);

  public SandboxQuota {
    if (proxyCpuMillis <= 0) {
      throw new IllegalArgumentException("proxyCpuMillis must be positive: " + proxyCpuMillis);
    }
    if (proxyMemoryMb <= 0) {
      throw new IllegalArgumentException("proxyMemoryMb must be positive: " + proxyMemoryMb);
    }
    if (ephemeralStorageMb <= 0) {
      throw new IllegalArgumentException(
          "ephemeralStorageMb must be positive: " + ephemeralStorageMb);
    }
  }
}
