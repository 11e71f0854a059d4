package dev.agentsandbox.proxy;

import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;

/**
 * A proxy started in-process from a {@link ProxyConfig}: the embedding API. It owns the listening
 * server, the decisions file and the metrics endpoint, and {@link #close} releases all of them. It
 * registers no shutdown hook (the CLI entry does, once per process). Thread-safe.
 */
public final class RunningProxy implements AutoCloseable {
  private final ProxyServer server;
  private final HTTPServer metricsServer;
  private final ExecutorService metricsExecutor;
  private final JsonLinesDecisionWriter writer;
  private final CountDownLatch closed = new CountDownLatch(1);
  private boolean closing;

  RunningProxy(
      ProxyServer server,
      HTTPServer metricsServer,
      ExecutorService metricsExecutor,
      JsonLinesDecisionWriter writer) {
    this.server = server;
    this.metricsServer = metricsServer;
    this.metricsExecutor = metricsExecutor;
    this.writer = writer;
  }

  /**
   * Starts a proxy that reports every decision to {@code listeners} (and to the decisions target of
   * the config, if any).
   *
   * @throws InvalidProxyConfigException when the config names a file that cannot be opened
   * @throws UnableToStartProxyException when the listening or metrics address cannot be bound
   */
  public static RunningProxy start(ProxyConfig config, List<DecisionListener> listeners) {
    return ProxyAssembly.start(config, listeners);
  }

  /**
   * Starts a proxy without its policy: it listens, and refuses every request ({@code
   * policy-pending}) until {@link #applyPolicy}. Only the listening address, limits, decisions and
   * metrics of {@code fixed} are used.
   *
   * @throws InvalidProxyConfigException when the config names a file that cannot be opened
   * @throws UnableToStartProxyException when the listening or metrics address cannot be bound
   */
  public static RunningProxy startAwaitingPolicy(
      ProxyConfig fixed, List<DecisionListener> listeners) {
    return ProxyAssembly.start(fixed, listeners, true);
  }

  /**
   * Puts the run's policy in force for every connection accepted from now on (see {@link
   * ProxyServer#applyPolicy}); only once. {@code policy} must have been checked against the fixed
   * settings ({@link ProxyConfigs#fromAwaitedPolicy}).
   *
   * @throws InvalidProxyConfigException when its resolver settings are unusable (nothing changes)
   * @throws IllegalStateException when a policy is already in force
   */
  public void applyPolicy(ProxyConfig policy) {
    if (!server.awaitingPolicy()) {
      throw new IllegalStateException("a policy is already in force (a proxy serves one run)");
    }
    HostResolver resolver = ProxyAssembly.resolver(policy);
    try {
      server.applyPolicy(policy, resolver);
    } catch (IllegalStateException e) {
      resolver.close();
      throw e;
    }
  }

  /**
   * The certificate (PEM) of the CA the proxy made for its run, when its policy inspects hosts: the
   * one thing of it the sandbox is given. Its key never leaves the proxy.
   */
  public java.util.Optional<String> caCertificatePem() {
    return server.caCertificatePem();
  }

  /** True while no policy is in force. */
  public boolean awaitingPolicy() {
    return server.awaitingPolicy();
  }

  /** The address and real port the proxy listens on. */
  public InetSocketAddress address() {
    return server.boundAddress();
  }

  /** Blocks until {@link #close} has finished (from any thread). */
  public void awaitClosed() throws InterruptedException {
    closed.await();
  }

  /**
   * Stops accepting, closes every connection, the metrics endpoint and the decisions file; only the
   * first call does anything.
   *
   * @throws UncheckedIOException when the decisions file could not be closed (everything else was)
   */
  @Override
  public void close() {
    synchronized (this) {
      if (closing) {
        return;
      }
      closing = true;
    }
    try {
      server.close();
      if (metricsServer != null) {
        metricsServer.close();
      }
      if (metricsExecutor != null) {
        metricsExecutor.shutdownNow();
      }
      if (writer != null) {
        writer.close();
      }
    } catch (IOException e) {
      throw new UncheckedIOException(
          "closing the decisions file failed: " + e.getMessage() + " (the last lines may be lost)",
          e);
    } finally {
      closed.countDown();
    }
  }
}
