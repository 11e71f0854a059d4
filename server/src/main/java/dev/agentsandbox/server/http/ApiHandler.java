package dev.agentsandbox.server.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import dev.agentsandbox.store.TokenInfo;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP entry point: routes, authenticates, checks that the token may touch the run a path names
 * ({@link RunGuard}), calls the handler, maps failures, counts and logs each request. Logs carry
 * the method, route template, status, duration and token name; never the token, the query or the
 * body.
 */
public final class ApiHandler implements HttpHandler {
  private static final Logger ACCESS = LoggerFactory.getLogger("dev.agentsandbox.server.access");

  /**
   * How much of an unread request body is read and dropped after an early answer; past it the
   * connection is closed (and the answer says {@code Connection: close}), so an upload bigger than
   * this can still end in a reset. Reading is cheap next to what a client spends sending it, and an
   * over-limit upload of realistic size (an artefact, a log) gets its 413 read.
   */
  static final long DRAIN_LIMIT_BYTES = 64L * 1024 * 1024;

  private final Router router;
  private final Authenticator authenticator;
  private final RunGuard runs;
  private final ErrorMapper errors;
  private final ServerMetrics metrics;
  private final ObjectMapper mapper;
  private final long maxBodyBytes;

  public ApiHandler(
      Router router,
      Authenticator authenticator,
      RunGuard runs,
      ErrorMapper errors,
      ServerMetrics metrics,
      ObjectMapper mapper,
      long maxBodyBytes) {
    this.router = router;
    this.authenticator = authenticator;
    this.runs = runs;
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
        String runId = match.params().get("id");
        if (runId != null) {
          // Every endpoint of a run, before its handler: a run of an agent the token may not touch
          // is answered as one that does not exist (docs/architecture.md invariant 13).
          runs.check(principal, runId);
        }
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
    if (declaredLength(exchange) > DRAIN_LIMIT_BYTES) {
      // More than we will read after answering: say that the connection ends with this answer.
      exchange.getResponseHeaders().set("Connection", "close");
    }
    if (response.stream() != null && !method.equals("HEAD")) {
      drainUnreadBody(exchange);
      // Length 0 asks the JDK server for chunked encoding: the body is written as it comes; a
      // known length is sent as such (-1 says "no body" to the JDK server, so an empty file too
      // goes chunked).
      exchange.sendResponseHeaders(
          response.status(), response.streamLength() > 0 ? response.streamLength() : 0);
      try (OutputStream out = exchange.getResponseBody()) {
        response.stream().writeTo(out);
      }
      return;
    }
    boolean noBody = method.equals("HEAD") || response.body().length == 0;
    if (noBody) {
      // The JDK server ends the exchange as soon as a bodiless answer's headers are out.
      drainUnreadBody(exchange);
      exchange.sendResponseHeaders(response.status(), -1);
      return;
    }
    exchange.sendResponseHeaders(response.status(), response.body().length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(response.body());
      out.flush();
      // The answer is on the wire; only now read what the client still sends (see
      // DRAIN_LIMIT_BYTES).
      drainUnreadBody(exchange);
    }
  }

  /**
   * Reads and drops what is left of the request body, up to {@link #DRAIN_LIMIT_BYTES}. An early
   * answer (401, 403, 413, 415) leaves the body unread, and a client that writes its whole body
   * before it reads (Python's urllib, most HTTP/1.1 libraries without {@code Expect: 100-continue})
   * is still sending. Closing a socket with unread bytes makes the kernel answer with a reset, and
   * a reset can destroy the answer in the client's receive buffer before the client reads it; so
   * the server lingers the way HTTP servers do (nginx's {@code lingering_close}): answer, read and
   * drop up to a bound, then close. The JDK server itself drains only 64 KiB.
   */
  private static void drainUnreadBody(HttpExchange exchange) {
    byte[] buffer = new byte[64 * 1024];
    long left = DRAIN_LIMIT_BYTES;
    try {
      InputStream in = exchange.getRequestBody();
      while (left > 0) {
        int read = in.read(buffer, 0, (int) Math.min(buffer.length, left));
        if (read < 0) {
          return;
        }
        left -= read;
      }
    } catch (IOException e) {
      // The client stopped sending (curl does on an early answer): nothing is left to drain.
    }
  }

  private static long declaredLength(HttpExchange exchange) {
    String length = exchange.getRequestHeaders().getFirst("Content-Length");
    if (length == null) {
      return -1;
    }
    try {
      return Long.parseLong(length.trim());
    } catch (NumberFormatException e) {
      return -1;
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
