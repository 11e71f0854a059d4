package dev.agentsandbox.server.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import dev.agentsandbox.store.TokenInfo;
import java.io.IOException;
import java.io.OutputStream;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP entry point: routes, authenticates, calls the handler, maps failures, counts and logs
 * each request. Logs carry the method, route template, status, duration and token name; never the
 * token, the query or the body.
 */
public final class ApiHandler implements HttpHandler {
  private static final Logger ACCESS = LoggerFactory.getLogger("dev.agentsandbox.server.access");

  private final Router router;
  private final Authenticator authenticator;
  private final ErrorMapper errors;
  private final ServerMetrics metrics;
  private final ObjectMapper mapper;
  private final long maxBodyBytes;

  public ApiHandler(
      Router router,
      Authenticator authenticator,
      ErrorMapper errors,
      ServerMetrics metrics,
      ObjectMapper mapper,
      long maxBodyBytes) {
    this.router = router;
    this.authenticator = authenticator;
    this.errors = errors;
    this.metrics = metrics;
    this.mapper = mapper;
    this.maxBodyBytes = maxBodyBytes;
  }

  @Override
  public void handle(HttpExchange exchange) throws IOException {
    long start = System.nanoTime();
    String method = exchange.getRequestMethod();
    String routeLabel = "unmatched";
    String actor = "-";
    Response response;
    try {
      Router.Match match = router.match(method, exchange.getRequestURI().getRawPath());
      Route route = match.route();
      routeLabel = route.path();
      TokenInfo principal = null;
      if (!route.isPublic()) {
        principal =
            authenticator.authorize(
                Optional.ofNullable(exchange.getRequestHeaders().getFirst("Authorization")),
                route.scope(),
                route.runSelf() ? Optional.ofNullable(match.params().get("id")) : Optional.empty());
        actor = principal.name();
      }
      Request request = new Request(exchange, match.params(), mapper, maxBodyBytes, principal);
      response = route.handler().handle(request);
    } catch (Exception e) {
      response = errors.toResponse(e);
    }
    try {
      send(exchange, method, response);
    } finally {
      exchange.close();
      metrics.request(routeLabel, boundedMethod(method), response.status());
      ACCESS.info(
          "{} {} {} {}ms actor={}",
          boundedMethod(method),
          routeLabel,
          response.status(),
          (System.nanoTime() - start) / 1_000_000,
          actor);
    }
  }

  private static void send(HttpExchange exchange, String method, Response response)
      throws IOException {
    exchange.getResponseHeaders().set("Content-Type", response.contentType());
    exchange.getResponseHeaders().set("Cache-Control", "no-store");
    exchange.getResponseHeaders().set("X-Content-Type-Options", "nosniff");
    response.headers().forEach((name, value) -> exchange.getResponseHeaders().set(name, value));
    if (response.stream() != null && !method.equals("HEAD")) {
      // Length 0 asks the JDK server for chunked encoding: the body is written as it comes.
      exchange.sendResponseHeaders(response.status(), 0);
      try (OutputStream out = exchange.getResponseBody()) {
        response.stream().writeTo(out);
      }
      return;
    }
    boolean noBody = method.equals("HEAD") || response.body().length == 0;
    exchange.sendResponseHeaders(response.status(), noBody ? -1 : response.body().length);
    if (!noBody) {
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(response.body());
      }
    }
  }

  /** Methods outside the usual set are one label, so clients cannot inflate metric cardinality. */
  private static String boundedMethod(String method) {
    return switch (method) {
      case "GET", "PUT", "POST", "DELETE", "PATCH", "HEAD", "OPTIONS" -> method;
      default -> "other";
    };
  }
}
