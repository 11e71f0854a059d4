package dev.agentsandbox.backend.docker;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.regex.Pattern;

/**
 * How the Docker backend builds each run's sandbox, beyond what the run itself specifies. Built
 * with {@link #builder()} (or {@link #toBuilder()} from another configuration); every field has a
 * default.
 *
 * @param proxyImage the image of the run's egress proxy (built by {@code images/build.sh})
 * @param proxyPort the port the proxy listens on, on its address on the run's private network only
 * @param workloadUser the {@code uid:gid} the workload runs as, whatever its image says; never 0
 * @param tmpfsMb the size of the workload's writable {@code /tmp} and {@code /workspace}, in MiB
 * @param proxyMemoryMb the proxy container's memory cap, in MiB
 * @param proxyReadyTimeout how long to wait for the proxy to report that it listens
 * @param gvisorRuntime the name under which gVisor's {@code runsc} is registered with the daemon
 * @param subnetPool where each run's two networks take their subnets; empty: a range this backend
 *     chooses itself at its first launch, free on the daemon and on this host, sized for {@code
 *     concurrentRuns} ({@link AutomaticSubnets})
 * @param concurrentRuns how many runs at once the automatic subnet pool must hold (the control
 *     plane's run limit); unused with an explicit {@code subnetPool}
 * @param proxyPoolSize how many proxies (with their volumes and networks) are kept started and
 *     awaiting a policy for cold runs, 0 (off) to {@value ProxyPool#MAX_SIZE}; empty: chosen from
 *     the daemon host's memory ({@link ProxyPoolSizing}); see {@link ProxyPool}
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
    int concurrentRuns,
    OptionalInt proxyPoolSize,
    Optional<String> instance) {
  private static final Pattern USER = Pattern.compile("[0-9]+:[0-9]+");
  private static final Pattern INSTANCE = Pattern.compile("[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?");

  /** The image {@code images/build.sh} builds. */
  public static final String DEFAULT_PROXY_IMAGE = "agent-sandbox/proxy:dev";

  /** The runs at once the automatic subnet pool holds by default: the run service's own limit. */
  public static final int DEFAULT_CONCURRENT_RUNS = 16;

  /** The most runs at once an automatic subnet pool may be sized for. */
  public static final int MAX_CONCURRENT_RUNS = 1024;

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
    if (concurrentRuns < 1 || concurrentRuns > MAX_CONCURRENT_RUNS) {
      throw new IllegalArgumentException(
          "concurrentRuns must be 1-" + MAX_CONCURRENT_RUNS + ": " + concurrentRuns);
    }
    Objects.requireNonNull(proxyPoolSize, "proxyPoolSize");
    if (proxyPoolSize.isPresent()
        && (proxyPoolSize.getAsInt() < 0 || proxyPoolSize.getAsInt() > ProxyPool.MAX_SIZE)) {
      throw new IllegalArgumentException(
          "the proxy pool's size must be 0 (off) to "
              + ProxyPool.MAX_SIZE
              + " (each standby is a running proxy and two networks): "
              + proxyPoolSize.getAsInt());
    }
    Objects.requireNonNull(instance, "instance");
    if (instance.isPresent() && !INSTANCE.matcher(instance.get()).matches()) {
      throw new IllegalArgumentException(
          "instance must be 1-63 lower-case letters, digits and dashes: " + instance.get());
    }
  }

  /**
   * The defaults: the locally built proxy image on port 3128, the workload as nobody, an automatic
   * subnet pool for {@value #DEFAULT_CONCURRENT_RUNS} runs, and no proxy pool (a pool is a thread
   * and running proxies its owner must {@link DockerBackend#close()}; {@code serve} asks for an
   * automatic one).
   */
  public static DockerBackendConfig defaults() {
    return builder().build();
  }

  /** A builder holding the {@link #defaults()}. */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder holding this configuration's values. */
  public Builder toBuilder() {
    return new Builder(this);
  }

  /** The configuration's values, each settable; {@link #build()} validates them together. */
  public static final class Builder {
    private String proxyImage = DEFAULT_PROXY_IMAGE;
    private int proxyPort = 3128;
    private String workloadUser = "65534:65534";
    private int tmpfsMb = 64;
    private int proxyMemoryMb = 256;
    private Duration proxyReadyTimeout = Duration.ofSeconds(30);
    private String gvisorRuntime = "runsc";
    private Optional<SubnetPool> subnetPool = Optional.empty();
    private int concurrentRuns = DEFAULT_CONCURRENT_RUNS;
    private OptionalInt proxyPoolSize = OptionalInt.of(0);
    private Optional<String> instance = Optional.empty();

    private Builder() {}

    private Builder(DockerBackendConfig c) {
      proxyImage = c.proxyImage;
      proxyPort = c.proxyPort;
      workloadUser = c.workloadUser;
      tmpfsMb = c.tmpfsMb;
      proxyMemoryMb = c.proxyMemoryMb;
      proxyReadyTimeout = c.proxyReadyTimeout;
      gvisorRuntime = c.gvisorRuntime;
      subnetPool = c.subnetPool;
      concurrentRuns = c.concurrentRuns;
      proxyPoolSize = c.proxyPoolSize;
      instance = c.instance;
    }

    public Builder proxyImage(String value) {
      proxyImage = value;
      return this;
    }

    public Builder proxyPort(int value) {
      proxyPort = value;
      return this;
    }

    public Builder workloadUser(String value) {
      workloadUser = value;
      return this;
    }

    public Builder tmpfsMb(int value) {
      tmpfsMb = value;
      return this;
    }

    public Builder proxyMemoryMb(int value) {
      proxyMemoryMb = value;
      return this;
    }

    public Builder proxyReadyTimeout(Duration value) {
      proxyReadyTimeout = value;
      return this;
    }

    public Builder gvisorRuntime(String value) {
      gvisorRuntime = value;
      return this;
    }

    /** Runs' subnets from the operator's {@code pool}. */
    public Builder subnetPool(SubnetPool pool) {
      subnetPool = Optional.of(Objects.requireNonNull(pool, "pool"));
      return this;
    }

    /** Runs' subnets from a range the backend chooses free at its first launch (the default). */
    public Builder automaticSubnets() {
      subnetPool = Optional.empty();
      return this;
    }

    public Builder concurrentRuns(int value) {
      concurrentRuns = value;
      return this;
    }

    /** Keeps {@code size} proxies started for cold runs (0: none, the default). */
    public Builder proxyPoolSize(int size) {
      proxyPoolSize = OptionalInt.of(size);
      return this;
    }

    /** A proxy pool sized from the daemon host's memory ({@link ProxyPoolSizing}). */
    public Builder automaticProxyPool() {
      proxyPoolSize = OptionalInt.empty();
      return this;
    }

    /** Labels every object with {@code id} as {@link dev.agentsandbox.backend.Labels#INSTANCE}. */
    public Builder instance(String id) {
      instance = Optional.of(Objects.requireNonNull(id, "id"));
      return this;
    }

    /**
     * The configuration.
     *
     * @throws IllegalArgumentException naming the value that is out of range
     */
    public DockerBackendConfig build() {
      return new DockerBackendConfig(
          proxyImage,
          proxyPort,
          workloadUser,
          tmpfsMb,
          proxyMemoryMb,
          proxyReadyTimeout,
          gvisorRuntime,
          subnetPool,
          concurrentRuns,
          proxyPoolSize,
          instance);
    }
  }
}
