package dev.agentsandbox.backend.docker;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * How the Docker backend builds each run's sandbox, beyond what the run itself specifies.
 *
 * @param proxyImage the image of the run's egress proxy (built by {@code images/build.sh})
 * @param proxyPort the port the proxy listens on inside the run's private network
 * @param workloadUser the {@code uid:gid} the workload runs as, whatever its image says; never 0
 * @param tmpfsMb the size of the workload's writable {@code /tmp}, in MiB
 * @param proxyMemoryMb the proxy container's memory cap, in MiB
 * @param proxyReadyTimeout how long to wait for the proxy to report that it listens
 * @param gvisorRuntime the name under which gVisor's {@code runsc} is registered with the daemon
 * @param subnetPool where each run's two networks take their subnets; empty: Docker's default
 *     address pools
 * @param proxyPoolSize how many proxies (with their volumes and networks) are kept started and
 *     awaiting a policy for cold runs, 0 (off) to {@value ProxyPool#MAX_SIZE}; see {@link
 *     ProxyPool}
 * @param instance the control plane's identity (its store's), put on every object as {@link
 *     dev.agentsandbox.backend.Labels#INSTANCE} so that this backend's reaper leaves another
 *     control plane's objects alone until they expire; empty: no such label, and the reaper judges
 *     every object by its run alone
 */
public record DockerBackendConfig(
    String proxyImage,
    int proxyPort,
    String workloadUser,
    int tmpfsMb,
    int proxyMemoryMb,
    Duration proxyReadyTimeout,
    String gvisorRuntime,
    Optional<SubnetPool> subnetPool,
    int proxyPoolSize,
    Optional<String> instance) {
  private static final Pattern USER = Pattern.compile("[0-9]+:[0-9]+");
  private static final Pattern INSTANCE = Pattern.compile("[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?");

  /** The image {@code images/build.sh} builds. */
  public static final String DEFAULT_PROXY_IMAGE = "agent-sandbox/proxy:dev";

  public DockerBackendConfig {
    Objects.requireNonNull(proxyImage, "proxyImage");
    if (proxyPort < 1 || proxyPort > 65535) {
      throw new IllegalArgumentException("proxyPort must be 1-65535: " + proxyPort);
    }
    Objects.requireNonNull(workloadUser, "workloadUser");
    if (!USER.matcher(workloadUser).matches() || workloadUser.startsWith("0:")) {
      throw new IllegalArgumentException(
          "workloadUser must be a non-root numeric uid:gid: " + workloadUser);
    }
    if (tmpfsMb <= 0 || proxyMemoryMb <= 0) {
      throw new IllegalArgumentException("tmpfsMb and proxyMemoryMb must be positive");
    }
    Objects.requireNonNull(proxyReadyTimeout, "proxyReadyTimeout");
    Objects.requireNonNull(gvisorRuntime, "gvisorRuntime");
    Objects.requireNonNull(subnetPool, "subnetPool");
    if (proxyPoolSize < 0 || proxyPoolSize > ProxyPool.MAX_SIZE) {
      throw new IllegalArgumentException(
          "the proxy pool's size must be 0 (off) to "
              + ProxyPool.MAX_SIZE
              + " (each standby is a running proxy and two networks): "
              + proxyPoolSize);
    }
    Objects.requireNonNull(instance, "instance");
    if (instance.isPresent() && !INSTANCE.matcher(instance.get()).matches()) {
      throw new IllegalArgumentException(
          "instance must be 1-63 lower-case letters, digits and dashes: " + instance.get());
    }
  }

  /** A configuration without a proxy pool or an instance label. */
  public DockerBackendConfig(
      String proxyImage,
      int proxyPort,
      String workloadUser,
      int tmpfsMb,
      int proxyMemoryMb,
      Duration proxyReadyTimeout,
      String gvisorRuntime,
      Optional<SubnetPool> subnetPool) {
    this(
        proxyImage,
        proxyPort,
        workloadUser,
        tmpfsMb,
        proxyMemoryMb,
        proxyReadyTimeout,
        gvisorRuntime,
        subnetPool,
        0,
        Optional.empty());
  }

  /** A configuration that leaves subnets to Docker's default address pools. */
  public DockerBackendConfig(
      String proxyImage,
      int proxyPort,
      String workloadUser,
      int tmpfsMb,
      int proxyMemoryMb,
      Duration proxyReadyTimeout,
      String gvisorRuntime) {
    this(
        proxyImage,
        proxyPort,
        workloadUser,
        tmpfsMb,
        proxyMemoryMb,
        proxyReadyTimeout,
        gvisorRuntime,
        Optional.empty());
  }

  /** The defaults: the locally built proxy image on port 3128, the workload as nobody. */
  public static DockerBackendConfig defaults() {
    return new DockerBackendConfig(
        DEFAULT_PROXY_IMAGE, 3128, "65534:65534", 64, 256, Duration.ofSeconds(30), "runsc");
  }

  /** The same configuration with another proxy image. */
  public DockerBackendConfig withProxyImage(String image) {
    return new DockerBackendConfig(
        image,
        proxyPort,
        workloadUser,
        tmpfsMb,
        proxyMemoryMb,
        proxyReadyTimeout,
        gvisorRuntime,
        subnetPool,
        proxyPoolSize,
        instance);
  }

  /** The same configuration with another gVisor runtime name. */
  public DockerBackendConfig withGvisorRuntime(String runtime) {
    return new DockerBackendConfig(
        proxyImage,
        proxyPort,
        workloadUser,
        tmpfsMb,
        proxyMemoryMb,
        proxyReadyTimeout,
        runtime,
        subnetPool,
        proxyPoolSize,
        instance);
  }

  /** The same configuration taking runs' subnets from {@code pool}. */
  public DockerBackendConfig withSubnetPool(SubnetPool pool) {
    return new DockerBackendConfig(
        proxyImage,
        proxyPort,
        workloadUser,
        tmpfsMb,
        proxyMemoryMb,
        proxyReadyTimeout,
        gvisorRuntime,
        Optional.of(pool),
        proxyPoolSize,
        instance);
  }

  /**
   * The same configuration keeping {@code size} proxies started for cold runs (0: none).
   *
   * @throws IllegalArgumentException when the size is negative or above {@value ProxyPool#MAX_SIZE}
   */
  public DockerBackendConfig withProxyPool(int size) {
    return new DockerBackendConfig(
        proxyImage,
        proxyPort,
        workloadUser,
        tmpfsMb,
        proxyMemoryMb,
        proxyReadyTimeout,
        gvisorRuntime,
        subnetPool,
        size,
        instance);
  }

  /**
   * The same configuration labelling every object with {@code id} as {@link
   * dev.agentsandbox.backend.Labels#INSTANCE} (the control plane's store identity).
   */
  public DockerBackendConfig withInstance(String id) {
    return new DockerBackendConfig(
        proxyImage,
        proxyPort,
        workloadUser,
        tmpfsMb,
        proxyMemoryMb,
        proxyReadyTimeout,
        gvisorRuntime,
        subnetPool,
        proxyPoolSize,
        Optional.of(id));
  }
}
