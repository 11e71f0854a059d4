package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.model.Info;
import com.github.dockerjava.api.model.RuntimeInfo;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.PreparedSandbox;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.ReapReport;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxBackend;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.SandboxPlan;
import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import java.util.function.Predicate;

/**
 * Sandboxes as Docker containers: per run, a private network that reaches nothing outside itself,
 * the run's egress proxy on it and on a network that leads out, and the workload on the private
 * network only, under gVisor when the daemon has {@code runsc}. See docs/backends/docker.md.
 */
public final class DockerBackend implements SandboxBackend {
  private static final org.slf4j.Logger LOG =
      org.slf4j.LoggerFactory.getLogger(DockerBackend.class);

  /** The backend's configured name. */
  public static final String NAME = "docker";

  /** No run lives longer than this, whatever its ttl says. */
  public static final Duration MAX_TTL = Duration.ofHours(4);

  private final DockerClient client;
  private final DockerBackendConfig config;
  private final DockerReaper reaper;
  private final SubnetAllocator subnets;
  private final ProxyPool<ProxyStandby> pool;
  private final SandboxLauncher launcher;
  private final DockerSettings settings;

  /** A standby no run took within this long is destroyed and replaced. */
  public static final Duration PROXY_POOL_MAX_IDLE = Duration.ofMinutes(10);

  /**
   * Creates the backend; with a proxy pool (a size above 0, or an automatic one) it starts filling
   * it in the background at once. {@link #close} drains it.
   *
   * @param client a client {@link DockerClients} built: the backend reads runs' outputs through its
   *     HTTP transport ({@link OutputArchive} says why)
   */
  public DockerBackend(DockerClient client, DockerBackendConfig config) {
    this(client, config, PROXY_POOL_MAX_IDLE, standbyLabelLifetime(PROXY_POOL_MAX_IDLE));
  }

  /**
   * How long a standby's expiry label lasts from its creation: the longest idle wait plus the
   * longest run on it plus five minutes. Docker labels cannot change when a run takes the standby,
   * and past its expiry the reaper removes an object whatever the control plane says.
   */
  static Duration standbyLabelLifetime(Duration poolMaxIdle) {
    return poolMaxIdle.plus(MAX_TTL).plus(Duration.ofMinutes(5));
  }

  /**
   * With another maximum idle time for the proxy pool's standbys and another lifetime of their
   * expiry label; for tests of their expiry.
   */
  DockerBackend(
      DockerClient client,
      DockerBackendConfig config,
      Duration poolMaxIdle,
      Duration standbyLabelLifetime) {
    this.client = Objects.requireNonNull(client, "client");
    this.config = Objects.requireNonNull(config, "config");
    this.reaper = new DockerReaper(client, config.instance());
    Clock clock = Clock.systemUTC();
    this.settings = new DockerSettings(client, config);
    this.subnets = new SubnetAllocator(settings::chooseSubnets, settings::daemonNetworks, clock);
    java.util.function.Function<String, ProxyStandby> create =
        id -> {
          Instant now = clock.instant();
          return ProxyStandby.create(
              client,
              config,
              subnets,
              id,
              now,
              now.plus(standbyLabelLifetime),
              config.proxyReadyTimeout());
        };
    this.pool =
        config.proxyPoolSize().isPresent()
            ? new ProxyPool<>(config.proxyPoolSize().getAsInt(), poolMaxIdle, clock, create)
            : new ProxyPool<>(
                PoolSize.learnt(settings::automaticPoolSize), poolMaxIdle, clock, create);
    this.launcher = new SandboxLauncher(client, transport(client), config, subnets);
    pool.start();
  }

  private static com.github.dockerjava.transport.DockerHttpClient transport(DockerClient client) {
    if (client instanceof com.github.dockerjava.core.DockerClientImpl impl) {
      return impl.getHttpClient();
    }
    throw new IllegalArgumentException(
        "the Docker backend needs a client built by DockerClients (a DockerClientImpl with its HTTP"
            + " transport), not a "
            + client.getClass().getName());
  }

  /**
   * The proxy pool's counts for {@code /metrics}: {@code ready} now, and {@code created}, {@code
   * taken}, {@code failed}, {@code expired} since start (all 0 without a pool).
   */
  @Override
  public Map<String, Long> proxyPoolCounts() {
    return pool.counts();
  }

  /** The configured pool size (0: no pool). */
  public int proxyPoolSize() {
    return pool.size();
  }

  /** The ids of the standbys ready now; for tests. */
  List<String> proxyPoolReady() {
    return pool.readyIds();
  }

  /** Takes a standby for a test that looks at one before any run; the caller destroys it. */
  java.util.Optional<ProxyStandby> takeStandbyForTest(String owner) {
    return pool.take(owner);
  }

  /** Drains the proxy pool: every standby no run took is removed. Runs are left alone. */
  @Override
  public void close() {
    pool.close();
  }

  /** How many subnet-pool blocks live sandboxes hold. */
  int subnetsHeld() {
    return subnets.held();
  }

  /** The subnet pool runs take their blocks from, chosen now if it was not yet. */
  SubnetPool subnetPool() {
    return subnets.pool();
  }

  @Override
  public String name() {
    return NAME;
  }

  /** Credentials arrive as 0400 files on a per-run tmpfs volume; see {@link RunLayout}. */
  @Override
  public boolean deliversCredentials() {
    return true;
  }

  @Override
  public Probe probe() {
    Info info;
    try {
      client.pingCmd().exec();
      info = client.infoCmd().exec();
    } catch (RuntimeException e) {
      return Probe.unavailable(
          NAME,
          "reaching the Docker daemon: "
              + DockerErrors.describe(e)
              + " (start it with scripts/install-host.sh, or point DOCKER_HOST at a running one)");
    }
    Map<String, RuntimeInfo> runtimes = info.getRuntimes() == null ? Map.of() : info.getRuntimes();
    String found =
        "Docker " + info.getServerVersion() + ", runtimes " + new TreeSet<>(runtimes.keySet());
    String settings = probedSettings(info);
    if (runtimes.containsKey(config.gvisorRuntime())) {
      return new Probe(
          NAME,
          true,
          Isolation.GVISOR,
          config.gvisorRuntime(),
          found + ": workloads run under gVisor; " + settings);
    }
    return new Probe(
        NAME,
        true,
        Isolation.CONTAINER,
        "runc",
        found
            + ": no '"
            + config.gvisorRuntime()
            + "' runtime, workloads share the host kernel (scripts/install-host.sh registers runsc); "
            + settings);
  }

  /**
   * The subnets and proxy pool this backend runs with ({@link DockerSettings#describe}), chosen now
   * when they are automatic and not chosen yet, for the probe's detail ({@code serve}'s start line
   * and {@code GET .../backends}); a probe must answer whatever happens: when they cannot be chosen
   * (no automatic range is free, the daemon stopped answering since the ping) the detail says why,
   * in the words a launch would fail with.
   */
  private String probedSettings(Info info) {
    try {
      return settings.describe(subnets.pool(), pool, info);
    } catch (RuntimeException e) {
      return "subnets and proxy pool not chosen yet: " + DockerErrors.describe(e);
    }
  }

  @Override
  public SandboxPlan plan(RunSpec spec) {
    Probe probe = probe();
    Isolation isolation = probe.available() ? probe.isolation() : Isolation.CONTAINER;
    String runtime = probe.available() ? probe.runtime() : "runc";
    String range =
        subnets
            .poolIfChosen()
            .map(p -> p.range().toString())
            .orElse("a range chosen free in " + AutomaticSubnets.SPACE + " at the first launch");
    SandboxPlan plan = new RunLayout(spec, config, runtime).plan(isolation, range);
    if (pool.size() == 0) {
      return plan;
    }
    List<dev.agentsandbox.backend.Manifest> manifests = new ArrayList<>();
    manifests.add(PoolPlan.manifest(spec, pool.size(), config.proxyPort()));
    manifests.addAll(plan.manifests());
    return new SandboxPlan(plan.backend(), plan.runtime(), plan.isolation(), manifests);
  }

  @Override
  public Sandbox launch(RunSpec spec, SandboxListener listener) {
    Probe probe = probe();
    return launch(spec, listener, probe, probe.runtime());
  }

  /** Launches under a chosen runtime (operators who pin runc; tests of each runtime). */
  Sandbox launch(RunSpec spec, SandboxListener listener, String runtime) {
    return launch(spec, listener, probe(), runtime);
  }

  private Sandbox launch(RunSpec spec, SandboxListener listener, Probe probe, String runtime) {
    Objects.requireNonNull(listener, "listener");
    refuseUnusable(spec, probe, runtime);
    return launcher.onPoolOrCold(
        pool,
        spec,
        listener,
        hardDeadline(spec),
        id -> new RunLayout(spec, config, runtime, java.util.OptionalLong.empty(), id));
  }

  private static Instant hardDeadline(RunSpec spec) {
    Duration ttl = spec.ttl().compareTo(MAX_TTL) > 0 ? MAX_TTL : spec.ttl();
    return Instant.now().plus(ttl);
  }

  /** Yes: the step runner in an idle workload container ({@link DockerSession}). */
  @Override
  public boolean opensSessions() {
    return true;
  }

  /**
   * A run's sandbox (fence, proxy, runtime, caps, user; on a proxy-pool standby when one is ready)
   * whose workload container idles in the image's {@code sleep} and holds the step runner; returns
   * once the runner has greeted the host, so the first step starts at once.
   */
  @Override
  public dev.agentsandbox.backend.session.SessionSandbox openSession(
      RunSpec spec, SandboxListener listener) {
    Probe probe = probe();
    return openSession(spec, listener, probe, probe.runtime());
  }

  /** Opens a session under a chosen runtime; for tests that cover each runtime the daemon has. */
  DockerSession openSession(RunSpec spec, SandboxListener listener, String runtime) {
    return openSession(spec, listener, probe(), runtime);
  }

  private DockerSession openSession(
      RunSpec spec, SandboxListener listener, Probe probe, String runtime) {
    Objects.requireNonNull(listener, "listener");
    refuseUnusable(spec, probe, runtime);
    Instant hardDeadline = hardDeadline(spec);
    // The idle process outlives the session's longest life by a minute, and no more.
    long idleSeconds = Duration.between(Instant.now(), hardDeadline).plusMinutes(1).toSeconds();
    DockerSandbox sandbox =
        launcher.onPoolOrCold(
            pool,
            spec,
            listener,
            hardDeadline,
            id -> new RunLayout(spec, config, runtime, java.util.OptionalLong.of(idleSeconds), id));
    List<String> env = new RunLayout(spec, config, runtime).agent(sandbox.proxyAddress()).envList();
    return DockerSession.open(client, sandbox, env, config.workloadUser(), hardDeadline);
  }

  /** Warm sandboxes: see {@link WarmDockerSandbox} and docs/backends/docker.md. */
  @Override
  public boolean prepares() {
    return true;
  }

  @Override
  public PreparedSandbox prepare(RunSpec spec, Instant idleUntil) {
    Probe probe = probe();
    return prepare(spec, idleUntil, probe, probe.runtime());
  }

  /** Prepares under a chosen runtime; for tests that cover each runtime the daemon has. */
  WarmDockerSandbox prepare(RunSpec spec, Instant idleUntil, String runtime) {
    return prepare(spec, idleUntil, probe(), runtime);
  }

  private WarmDockerSandbox prepare(RunSpec spec, Instant idleUntil, Probe probe, String runtime) {
    refuseUnusable(spec, probe, runtime);
    Duration ttl = spec.ttl().compareTo(MAX_TTL) > 0 ? MAX_TTL : spec.ttl();
    Instant now = Instant.now();
    Duration idle = idleUntil.isAfter(now) ? Duration.between(now, idleUntil) : Duration.ZERO;
    // The idle process outlives the longest wait plus the longest run, and no more: a warm
    // sandbox nobody took, or whose control plane died, stops its workload by itself.
    long sleepSeconds = idle.plus(ttl).plusMinutes(1).toSeconds();
    List<String> entrypoint;
    try {
      // The run's command goes after the image's entrypoint, as it would in a run of its own.
      com.github.dockerjava.api.model.ContainerConfig image =
          client.inspectImageCmd(spec.image()).exec().getConfig();
      String[] found = image == null ? null : image.getEntrypoint();
      entrypoint = found == null ? List.of() : List.of(found);
    } catch (RuntimeException e) {
      throw new UnableToLaunchSandboxException(
          "preparing a warm sandbox for agent "
              + spec.agent()
              + ": reading image "
              + spec.image()
              + ": "
              + DockerErrors.describe(e)
              + " (images are not pulled: build them with images/build.sh or load them first)",
          e);
    }
    HandOverListener listener = new HandOverListener();
    DockerSandbox sandbox =
        launcher.cold(
            new RunLayout(
                spec, config, runtime, java.util.OptionalLong.of(sleepSeconds), spec.runId()),
            spec,
            listener,
            idleUntil.plus(ttl));
    return new WarmDockerSandbox(
        client, launcher, sandbox, spec, config, runtime, entrypoint, listener);
  }

  private void refuseUnusable(RunSpec spec, Probe probe, String runtime) {
    if (!probe.available()) {
      throw new UnableToLaunchSandboxException(
          "launching the sandbox of run " + spec.runId() + " on docker: " + probe.detail());
    }
    boolean gvisor = runtime.equals(config.gvisorRuntime());
    if (spec.requireRuntimeClass() && !gvisor) {
      throw new UnableToLaunchSandboxException(
          "launching the sandbox of run "
              + spec.runId()
              + " on docker: the run requires gVisor but the workload would run under "
              + runtime
              + " ("
              + probe.detail()
              + ")");
    }
  }

  /**
   * Reaps as {@link DockerReaper} does, with one addition: objects labelled with a proxy-pool
   * standby's id (not a run's) are live while the standby is in this backend's pool or being
   * created, or while the run that took it is live by {@code isLive}; a standby this backend does
   * not know (a crashed control plane's) is over, and its expiry label bounds it anyway.
   */
  @Override
  public ReapReport reap(Instant now, Predicate<String> isLive) {
    ReapReport report =
        reaper.reap(
            now, id -> ProxyPool.isStandbyId(id) ? pool.isLive(id, isLive) : isLive.test(id));
    pool.forgetEnded(isLive);
    return report;
  }
}
