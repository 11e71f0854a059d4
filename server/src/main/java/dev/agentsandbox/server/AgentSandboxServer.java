package dev.agentsandbox.server;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import dev.agentsandbox.server.audit.AuditEndpoints;
import dev.agentsandbox.server.config.ConfigEndpoints;
import dev.agentsandbox.server.config.GovernedConfigs;
import dev.agentsandbox.server.http.ApiHandler;
import dev.agentsandbox.server.http.Authenticator;
import dev.agentsandbox.server.http.ErrorMapper;
import dev.agentsandbox.server.http.Json;
import dev.agentsandbox.server.http.Router;
import dev.agentsandbox.server.http.ServerMetrics;
import dev.agentsandbox.store.Store;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The control plane's composition root: wires the store into the admin API and serves it on the
 * JDK's HTTP server, one virtual thread per request. The caller owns the store.
 */
public final class AgentSandboxServer implements AutoCloseable {
  /** Bodies larger than this are refused with 413; configuration documents are far smaller. */
  public static final long MAX_BODY_BYTES = 1024 * 1024;

  private final HttpServer http;
  private final ExecutorService executor;

  private AgentSandboxServer(HttpServer http, ExecutorService executor) {
    this.http = http;
    this.executor = executor;
  }

  /**
   * Starts serving on {@code listen} (port 0 picks a free port).
   *
   * @throws UnableToStartServerException when the address cannot be bound
   */
  public static AgentSandboxServer start(InetSocketAddress listen, Store store) {
    ObjectMapper mapper = Json.mapper();
    ServerMetrics metrics = new ServerMetrics(new PrometheusRegistry());
    GovernedConfigs configs = new GovernedConfigs(store, mapper, metrics);
    Router router =
        new Router(
            ApiRoutes.table(
                new HealthEndpoints(store),
                metrics,
                new ConfigEndpoints(configs, mapper),
                new AuditEndpoints(store, mapper)));
    ApiHandler handler =
        new ApiHandler(
            router,
            new Authenticator(store.tokens()),
            new ErrorMapper(mapper),
            metrics,
            mapper,
            MAX_BODY_BYTES);
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
    http.start();
    return new AgentSandboxServer(http, executor);
  }

  /** The address actually bound (with the real port when 0 was asked for). */
  public InetSocketAddress address() {
    return http.getAddress();
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
    executor.close();
  }
}
