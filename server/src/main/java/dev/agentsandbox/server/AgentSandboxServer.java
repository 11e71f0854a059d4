package dev.agentsandbox.server;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import dev.agentsandbox.backend.BackendSelector;
import dev.agentsandbox.backend.ProbeCache;
import dev.agentsandbox.backend.SandboxBackend;
import dev.agentsandbox.mcp.McpHttpHandler;
import dev.agentsandbox.mcp.OriginCheck;
import dev.agentsandbox.policy.config.EgressPolicy;
import dev.agentsandbox.policy.config.SandboxConfig;
import dev.agentsandbox.policy.governance.GovernedDocument;
import dev.agentsandbox.runs.ArtifactRetention;
import dev.agentsandbox.runs.ConfigSource;
import dev.agentsandbox.runs.Reaper;
import dev.agentsandbox.runs.RunService;
import dev.agentsandbox.runs.json.Json;
import dev.agentsandbox.server.audit.AuditEndpoints;
import dev.agentsandbox.server.config.ConfigEndpoints;
import dev.agentsandbox.server.config.ProposalEndpoints;
import dev.agentsandbox.server.evidence.ChangeImpacts;
import dev.agentsandbox.server.evidence.EgressEvidence;
import dev.agentsandbox.server.governance.GovernedConfigs;
import dev.agentsandbox.server.http.ApiHandler;
import dev.agentsandbox.server.http.Authenticator;
import dev.agentsandbox.server.http.ErrorMapper;
import dev.agentsandbox.server.http.Route;
import dev.agentsandbox.server.http.Router;
import dev.agentsandbox.server.http.ServerLimits;
import dev.agentsandbox.server.http.ServerMetrics;
import dev.agentsandbox.server.run.RunEndpoints;
import dev.agentsandbox.store.Store;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The control plane's composition: wires the store and the parts a {@link RunWiring} hands it (the
 * backends, made by whoever starts the server: {@code serve} or a test) into the run service and
 * the admin API, and serves it on the JDK's HTTP server, one virtual thread per request. The caller
 * owns the store; the server closes the backends at its close (docs/architecture.md, "Who
 * composes").
 */
public final class AgentSandboxServer implements AutoCloseable {
  /** Bodies larger than this are refused with 413; configuration documents are far smaller. */
  public static final long MAX_BODY_BYTES = 1024 * 1024;

  private static final Logger LOG = LoggerFactory.getLogger(AgentSandboxServer.class);

  /** How often the warm pool is drained of what no longer matches and refilled. */
  static final Duration WARM_POOL_PERIOD = Duration.ofSeconds(1);

  private final HttpServer http;
  private final ExecutorService executor;

  private final RunService runs;
  private final ExecutorService runExecutor;
  private final AutoCloseable reaping;
  private final ScheduledExecutorService warming;
  private final Router router;
  private final List<dev.agentsandbox.backend.SandboxBackend> backends;
  private final ProbeCache probes;

  private AgentSandboxServer(
      HttpServer http,
      ExecutorService executor,
      RunService runs,
      ExecutorService runExecutor,
      AutoCloseable reaping,
      ScheduledExecutorService warming,
      Router router,
      List<dev.agentsandbox.backend.SandboxBackend> backends,
      ProbeCache probes) {
    this.backends = List.copyOf(backends);
    this.probes = probes;
    this.warming = warming;
    this.http = http;
    this.router = router;
    this.executor = executor;
    this.runs = runs;
    this.runExecutor = runExecutor;
    this.reaping = reaping;
  }

  /**
   * Starts serving on {@code listen} (port 0 picks a free port).
   *
   * @throws UnableToStartServerException when the address cannot be bound
   */
  public static AgentSandboxServer start(InetSocketAddress listen, Store store) {
    return start(listen, store, RunWiring.none("control-plane"));
  }

  /**
   * Starts serving on {@code listen} with the backends in {@code wiring}: marks runs a previous
   * life left live as failed, reaps what they left, and then reaps periodically.
   *
   * @throws UnableToStartServerException when the address cannot be bound
   */
  public static AgentSandboxServer start(InetSocketAddress listen, Store store, RunWiring wiring) {
    ObjectMapper mapper = Json.mapper();
    ServerMetrics metrics = new ServerMetrics(new PrometheusRegistry());
    EgressEvidence evidence = new EgressEvidence(store);
    GovernedConfigs configs =
        new GovernedConfigs(store, mapper, metrics, new ChangeImpacts(evidence));
    ExecutorService runExecutor = Executors.newVirtualThreadPerTaskExecutor();
    // Every backend probed in the background from now on: no request waits on the slow probe of a
    // backend it did not name (the microVM backend's KVM boot).
    ProbeCache probes = new ProbeCache(wiring.backends()).start();
    RunService runs =
        new RunService(
            new ConfigSource() {
              @Override
              public SandboxConfig sandbox() {
                return configs.current(GovernedDocument.SANDBOX).document();
              }

              @Override
              public EgressPolicy egress() {
                return configs.current(GovernedDocument.EGRESS_POLICY).document();
              }
            },
            new BackendSelector(probes),
            store,
            wiring.operator(),
            wiring.settings(),
            Clock.systemUTC(),
            runExecutor,
            mapper,
            wiring.contract().services(store));
    Router router =
        new Router(
            ApiRoutes.table(
                new HealthEndpoints(store),
                metrics,
                OpenApiDocument.load(),
                new ConfigEndpoints(configs, mapper),
                new ProposalEndpoints(configs, evidence, mapper),
                new AuditEndpoints(store, mapper),
                new RunEndpoints(runs, mapper),
                new BackendEndpoints(probes, mapper),
                ConsoleAssets.fromClasspath(),
                new dev.agentsandbox.server.run.ArtifactEndpoints(
                    wiring.contract().artifacts().map(a -> a.store()), store, mapper),
                new dev.agentsandbox.server.run.TimelineEndpoints(runs, mapper),
                new dev.agentsandbox.server.run.JwksEndpoint(wiring.contract().jwt(), mapper),
                new dev.agentsandbox.server.run.SessionEndpoints(runs, mapper),
                new TokenEndpoint(mapper)));
    ApiHandler handler =
        new ApiHandler(
            router,
            new Authenticator(store.tokens()),
            new dev.agentsandbox.server.run.AgentRunGuard(runs),
            new ErrorMapper(mapper),
            metrics,
            mapper,
            MAX_BODY_BYTES);
    // Before the first server of the JVM: the JDK server reads its limits once (ServerLimits).
    ServerLimits.apply();
    HttpServer http;
    try {
      http = HttpServer.create(listen, 0);
    } catch (IOException | UncheckedIOException e) {
      throw new UnableToStartServerException(
          "listen on "
              + listen.getHostString()
              + ":"
              + listen.getPort()
              + ": "
              + e.getMessage()
              + " (is another process on that port? choose one with --listen HOST:PORT)",
          e);
    }
    ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    http.setExecutor(executor);
    http.createContext("/", handler);
    // The MCP tools call this API with the caller's own token, so every check of the API applies
    // to them as it does to any client (docs/mcp.md).
    // Its Origin check accepts the origins of the address bound, never the Host a request names.
    http.createContext(
        McpHttpHandler.PATH,
        new McpHttpHandler(
            selfAddress(http.getAddress()), OriginCheck.listeningOn(http.getAddress())));
    int recovered = runs.recover();
    if (recovered > 0) {
      LOG.warn(
          "marked {} runs a previous life of this control plane left live as failed", recovered);
    }
    Reaper reaper =
        new Reaper(wiring.backends(), runs::isLive, store.audit(), Clock.systemUTC(), mapper);
    Optional<ArtifactRetention> retention =
        wiring
            .contract()
            .artifacts()
            .flatMap(
                a ->
                    a.retention()
                        .map(
                            keep ->
                                new ArtifactRetention(
                                    a.store(),
                                    keep,
                                    store.runs(),
                                    store.audit(),
                                    Clock.systemUTC(),
                                    mapper)));
    AutoCloseable reaping =
        wiring
            .reaping()
            .apply(
                () -> {
                  reaper.reapOnce();
                  runs.sweepRunTokens();
                  retention.ifPresent(ArtifactRetention::sweep);
                });
    metrics.warmPool(runs::warmSandboxes, runs::warmOutcomes);
    List<SandboxBackend> pooling =
        wiring.backends().stream().filter(b -> !b.proxyPoolCounts().isEmpty()).toList();
    if (!pooling.isEmpty()) {
      metrics.proxyPool(() -> proxyPoolCounts(pooling));
    }
    ScheduledExecutorService warming =
        Executors.newSingleThreadScheduledExecutor(
            Thread.ofPlatform().name("agent-sandbox-warm-pool").daemon().factory());
    warming.scheduleWithFixedDelay(
        () -> {
          try {
            runs.maintainWarmPool();
          } catch (RuntimeException e) {
            LOG.warn("warm pool upkeep failed: {}", e.getMessage());
          }
        },
        0,
        WARM_POOL_PERIOD.toMillis(),
        TimeUnit.MILLISECONDS);
    http.start();
    return new AgentSandboxServer(
        http, executor, runs, runExecutor, reaping, warming, router, wiring.backends(), probes);
  }

  /** The proxy pools' counts summed over the backends that keep one, for {@code /metrics}. */
  private static Map<String, Long> proxyPoolCounts(List<SandboxBackend> pooling) {
    Map<String, Long> sum = new LinkedHashMap<>();
    for (SandboxBackend backend : pooling) {
      backend.proxyPoolCounts().forEach((key, n) -> sum.merge(key, n, Long::sum));
    }
    return sum;
  }

  /** Every route served, for the tests that hold the route table and the OpenAPI document equal. */
  List<Route> routes() {
    return router.routes();
  }

  /** Where this process reaches its own API: the bound address, or loopback for a wildcard. */
  private static URI selfAddress(InetSocketAddress bound) {
    String host =
        bound.getAddress() == null || bound.getAddress().isAnyLocalAddress()
            ? "127.0.0.1"
            : bound.getAddress().getHostAddress();
    if (host.indexOf(':') >= 0) {
      host = "[" + host + "]";
    }
    return URI.create("http://" + host + ":" + bound.getPort());
  }

  /** The address actually bound (with the real port when 0 was asked for). */
  public InetSocketAddress address() {
    return http.getAddress();
  }

  /** Every backend's probe, kept and renewed in the background (serve prints the first answers). */
  public ProbeCache probes() {
    return probes;
  }

  /** The base URL, such as {@code http://127.0.0.1:8080}. */
  public String baseUrl() {
    InetSocketAddress address = address();
    String host = address.getHostString();
    if (host.indexOf(':') >= 0) {
      host = "[" + host + "]";
    }
    return "http://" + host + ":" + address.getPort();
  }

  /** Stops accepting, lets requests in flight finish for up to a second, then stops. */
  @Override
  public void close() {
    http.stop(1);
    try {
      reaping.close();
    } catch (Exception e) {
      LOG.warn("stopping the reaper: {}", e.getMessage());
    }
    warming.shutdownNow();
    probes.close();
    try {
      // Warm sandboxes are removed; live runs are killed and torn down; what does not end in time
      // is reaped at the next start.
      runs.shutdown(Duration.ofSeconds(20));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    // What the backends hold beside their runs (the Docker backend's proxy pool: standbys no run
    // took are removed).
    RunWiring.close(backends);
    runExecutor.shutdownNow();
    executor.close();
  }
}
