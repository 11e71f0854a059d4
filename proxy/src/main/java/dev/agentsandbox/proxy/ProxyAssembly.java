package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.net.IpLiteral;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;

/**
 * The proxy's composition root: picks the resolver (a hosts table or DNS), opens the decisions
 * file, starts the metrics endpoint and the server, and hands them to a {@link RunningProxy}. On a
 * failure half-way it closes what it had opened.
 */
final class ProxyAssembly {
  private ProxyAssembly() {}

  static RunningProxy start(ProxyConfig config, List<DecisionListener> extraListeners) {
    return start(config, extraListeners, false);
  }

  /**
   * Starts the proxy; with {@code awaitingPolicy} it serves no policy (everything refused) until
   * {@link RunningProxy#applyPolicy} and no resolver exists until then.
   */
  static RunningProxy start(
      ProxyConfig config, List<DecisionListener> extraListeners, boolean awaitingPolicy) {
    JsonLinesDecisionWriter writer = null;
    HTTPServer metricsServer = null;
    ExecutorService metricsExecutor = null;
    boolean started = false;
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
        metricsServer = startMetrics(at, proxyMetrics, metricsExecutor);
      }
      ProxyServer server =
          awaitingPolicy
              ? ProxyServer.startAwaitingPolicy(config, listeners, proxyMetrics)
              : ProxyServer.start(config, resolver(config), listeners, proxyMetrics);
      started = true;
      return new RunningProxy(server, metricsServer, metricsExecutor, writer);
    } finally {
      if (!started) {
        if (metricsServer != null) {
          metricsServer.close();
        }
        if (metricsExecutor != null) {
          metricsExecutor.shutdownNow();
        }
        if (writer != null) {
          try {
            writer.close();
          } catch (IOException ignored) {
            // The start failure is what gets reported.
          }
        }
      }
    }
  }

  /** The resolver the config asks for: its hosts table, or DNS (its server or the system's). */
  static HostResolver resolver(ProxyConfig config) {
    return config.hosts().isPresent()
        ? new StaticHostResolver(config.hosts().get())
        : new DnsHostResolver(
            config.limits().dnsTimeout(),
            config.dnsServer().map(a -> new InetSocketAddress(resolveLiteral(a), a.getPort())));
  }

  private static HTTPServer startMetrics(
      InetSocketAddress at, ProxyMetrics metrics, ExecutorService executor) {
    try {
      return HTTPServer.builder()
          .inetAddress(InetAddress.getByName(at.getHostString()))
          .port(at.getPort())
          .registry(metrics.registry())
          .executorService(executor)
          .buildAndStart();
    } catch (IOException e) {
      throw new UnableToStartProxyException(
          "starting the metrics endpoint failed: " + e.getMessage(), e);
    }
  }

  private static JsonLinesDecisionWriter openWriter(String target) {
    if (target.equals("-")) {
      return new JsonLinesDecisionWriter(new FileOutputStream(FileDescriptor.out), false);
    }
    try {
      OutputStream out =
          Files.newOutputStream(
              Path.of(target), StandardOpenOption.CREATE, StandardOpenOption.APPEND);
      return new JsonLinesDecisionWriter(new BufferedOutputStream(out), true);
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

  private static ThreadFactory daemon() {
    return runnable -> {
      Thread thread = new Thread(runnable, "agent-sandbox-proxy-metrics");
      thread.setDaemon(true);
      return thread;
    };
  }
}
