package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.net.IpLiteral;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code agent-sandbox proxy}: runs one sandbox's egress proxy until the process is stopped.
 * Self-contained so the CLI can add it as a subcommand; exit code 2 with one line on stderr for bad
 * input, and one ready line on stderr once connections are accepted.
 */
@Command(
    name = "proxy",
    mixinStandardHelpOptions = true,
    description = "Run a sandbox's default-deny egress proxy (HTTP CONNECT and plain HTTP).")
public final class ProxyCommand implements Callable<Integer> {
  /** Exit code for bad input (command line or policy file). */
  public static final int EXIT_BAD_INPUT = 2;

  /** Exit code when the proxy could not start (port taken, metrics port taken). */
  public static final int EXIT_START_FAILED = 1;

  @Option(
      names = "--policy",
      paramLabel = "FILE",
      description = "Read everything from this JSON file.")
  Path policy;

  @Option(names = "--listen", paramLabel = "HOST:PORT", description = "Where to accept clients.")
  String listen;

  @Option(names = "--allow", paramLabel = "LIST", description = "Comma-separated allow-list.")
  String allow;

  @Option(
      names = "--instance-allow",
      paramLabel = "LIST",
      description = "The instance egress policy (unrestricted when absent).")
  String instanceAllow;

  @Option(
      names = "--internal-cidr",
      paramLabel = "CIDR",
      description = "An operator's internal destination allowed names may resolve to.")
  List<String> internalCidrs = new ArrayList<>();

  @Option(names = "--hosts", paramLabel = "FILE", description = "Resolve from a hosts file.")
  Path hosts;

  @Option(names = "--dns-server", paramLabel = "HOST:PORT", description = "Ask only this server.")
  String dnsServer;

  @Option(names = "--decisions", paramLabel = "FILE|-", description = "Write decisions here.")
  String decisions;

  @Option(names = "--run-id", paramLabel = "ID", description = "The run this proxy serves.")
  String runId;

  @Option(names = "--metrics", paramLabel = "HOST:PORT", description = "Serve Prometheus metrics.")
  String metrics;

  @Option(names = "--connect-timeout", paramLabel = "DURATION", description = "e.g. 10s")
  String connectTimeout;

  @Option(names = "--idle-timeout", paramLabel = "DURATION", description = "e.g. 5m")
  String idleTimeout;

  @Option(names = "--max-lifetime", paramLabel = "DURATION", description = "e.g. 1h")
  String maxLifetime;

  @Option(names = "--max-connections", paramLabel = "N", description = "Concurrent clients.")
  Integer maxConnections;

  private final List<DecisionListener> extraListeners = new ArrayList<>();
  private final CountDownLatch stop = new CountDownLatch(1);
  private volatile ProxyServer running;

  /** Adds an in-process listener (the control plane's) that receives every decision. */
  public ProxyCommand addListener(DecisionListener listener) {
    extraListeners.add(listener);
    return this;
  }

  /** The running server once ready, for in-process use; null before. */
  public ProxyServer server() {
    return running;
  }

  /** Asks a running {@link #call()} to stop and return. */
  public void stop() {
    stop.countDown();
  }

  @Override
  public Integer call() {
    PrintStream err = System.err;
    ProxyConfig config;
    try {
      config = config();
    } catch (InvalidProxyConfigException e) {
      err.println("agent-sandbox proxy: " + e.getMessage());
      return EXIT_BAD_INPUT;
    }
    JsonLinesDecisionWriter writer = null;
    HTTPServer metricsServer = null;
    ExecutorService metricsExecutor = null;
    ProxyServer server = null;
    try {
      List<DecisionListener> listeners = new ArrayList<>(extraListeners);
      if (config.decisions().isPresent()) {
        writer = openWriter(config.decisions().get());
        listeners.add(writer);
      }
      ProxyMetrics proxyMetrics = new ProxyMetrics();
      if (config.metrics().isPresent()) {
        InetSocketAddress at = config.metrics().get();
        metricsExecutor = Executors.newSingleThreadExecutor(daemon());
        metricsServer =
            HTTPServer.builder()
                .inetAddress(InetAddress.getByName(at.getHostString()))
                .port(at.getPort())
                .registry(proxyMetrics.registry())
                .executorService(metricsExecutor)
                .buildAndStart();
      }
      HostResolver resolver =
          config.hosts().isPresent()
              ? new StaticHostResolver(config.hosts().get())
              : new DnsHostResolver(
                  config.limits().dnsTimeout(),
                  config
                      .dnsServer()
                      .map(a -> new InetSocketAddress(resolveLiteral(a), a.getPort())));
      server = ProxyServer.start(config, resolver, listeners, proxyMetrics);
      running = server;
      err.println("agent-sandbox proxy ready on " + format(server.boundAddress()));
      Thread hook = new Thread(stop::countDown, "agent-sandbox-proxy-shutdown");
      Runtime.getRuntime().addShutdownHook(hook);
      stop.await();
      return 0;
    } catch (InvalidProxyConfigException e) {
      err.println("agent-sandbox proxy: " + e.getMessage());
      return EXIT_BAD_INPUT;
    } catch (UnableToStartProxyException e) {
      err.println("agent-sandbox proxy: " + e.getMessage());
      return EXIT_START_FAILED;
    } catch (IOException e) {
      err.println("agent-sandbox proxy: starting the metrics endpoint failed: " + e.getMessage());
      return EXIT_START_FAILED;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return 0;
    } finally {
      running = null;
      if (server != null) {
        server.close();
      }
      if (metricsServer != null) {
        metricsServer.close();
      }
      if (metricsExecutor != null) {
        metricsExecutor.shutdownNow();
      }
      if (writer != null) {
        try {
          writer.close();
        } catch (IOException e) {
          err.println("agent-sandbox proxy: closing the decisions file failed: " + e.getMessage());
        }
      }
    }
  }

  /** The validated configuration these options describe. */
  ProxyConfig config() {
    if (policy != null) {
      if (listen != null
          || allow != null
          || instanceAllow != null
          || !internalCidrs.isEmpty()
          || hosts != null
          || dnsServer != null
          || decisions != null
          || runId != null
          || metrics != null
          || connectTimeout != null
          || idleTimeout != null
          || maxLifetime != null
          || maxConnections != null) {
        throw new InvalidProxyConfigException(
            "--policy cannot be combined with other options (put everything in the file)");
      }
      return ProxyConfigs.fromPolicyFile(policy);
    }
    Limits d = Limits.DEFAULTS;
    Limits limits =
        new Limits(
            connectTimeout == null
                ? d.connectTimeout()
                : ProxyConfigs.duration(connectTimeout, "--connect-timeout"),
            d.dnsTimeout(),
            idleTimeout == null
                ? d.idleTimeout()
                : ProxyConfigs.duration(idleTimeout, "--idle-timeout"),
            maxLifetime == null
                ? d.maxLifetime()
                : ProxyConfigs.duration(maxLifetime, "--max-lifetime"),
            maxConnections == null ? d.maxConnections() : maxConnections,
            d.maxHeaderBytes(),
            d.ioThreads());
    return ProxyConfigs.fromOptions(
        listen,
        allow,
        instanceAllow,
        internalCidrs,
        hosts,
        dnsServer,
        decisions,
        runId,
        metrics,
        limits);
  }

  private static JsonLinesDecisionWriter openWriter(String target) {
    if (target.equals("-")) {
      return new JsonLinesDecisionWriter(
          new java.io.FileOutputStream(java.io.FileDescriptor.out), false);
    }
    try {
      OutputStream out =
          Files.newOutputStream(
              Path.of(target), StandardOpenOption.CREATE, StandardOpenOption.APPEND);
      return new JsonLinesDecisionWriter(new java.io.BufferedOutputStream(out), true);
    } catch (IOException e) {
      throw new InvalidProxyConfigException(
          "opening decisions file " + target + " failed: " + e.getMessage(), e);
    }
  }

  private static InetAddress resolveLiteral(InetSocketAddress unresolved) {
    try {
      return IpLiteral.parseAddress(unresolved.getHostString());
    } catch (IllegalArgumentException e) {
      throw new InvalidProxyConfigException(
          "--dns-server: the host must be an IP address, not '"
              + Echo.of(unresolved.getHostString())
              + "'");
    }
  }

  static String format(InetSocketAddress address) {
    InetAddress ip = address.getAddress();
    String host = IpLiteral.format(ip);
    return (ip instanceof Inet6Address ? "[" + host + "]" : host) + ":" + address.getPort();
  }

  private static java.util.concurrent.ThreadFactory daemon() {
    return runnable -> {
      Thread thread = new Thread(runnable, "agent-sandbox-proxy-metrics");
      thread.setDaemon(true);
      return thread;
    };
  }

  /** For tests and embedding: {@code Optional} of the running server's address. */
  public Optional<InetSocketAddress> boundAddress() {
    ProxyServer server = running;
    return server == null ? Optional.empty() : Optional.of(server.boundAddress());
  }
}
