package dev.agentsandbox.testing.api;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A loopback HTTP relay in front of the server under test for clients that are not Java (a Node or
 * Python test's own admin-API calls): each exchange is forwarded as it came, its answer returned as
 * it went (less the headers of one hop), and the pair checked against openapi.json ({@link
 * OpenApiContract}) on the way. A failed check does not change the answer the client sees; it is
 * kept, and the test asserts {@link #violations()} is empty at its end. JSON exchanges only: the
 * body is read whole, and streamed answers are not relayed as streams.
 */
public final class CheckingRelay implements AutoCloseable {
  /**
   * Headers of one hop (and those the JDK's client sets itself): neither forwarded nor returned.
   */
  private static final Set<String> HOP =
      Set.of(
          "connection",
          "content-length",
          "date",
          "expect",
          "host",
          "keep-alive",
          "transfer-encoding",
          "upgrade");

  private final String target;
  private final HttpServer server;
  private final ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
  private final List<String> violations = new CopyOnWriteArrayList<>();
  private final List<String> relayed = new CopyOnWriteArrayList<>();

  private CheckingRelay(String target) throws IOException {
    this.target = target;
    this.server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.setExecutor(threads);
    server.createContext("/", this::relay);
    server.start();
  }

  /** A relay to {@code targetBaseUrl} (http://host:port), listening on a free loopback port. */
  public static CheckingRelay to(String targetBaseUrl) throws IOException {
    return new CheckingRelay(targetBaseUrl);
  }

  /** Where clients send their requests instead of the server. */
  public String baseUrl() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  /** Each failed check, and each exchange the relay could not forward, in order. */
  public List<String> violations() {
    return List.copyOf(violations);
  }

  /** "METHOD path → status" of each exchange relayed, so a test can show it checked some. */
  public List<String> relayed() {
    return List.copyOf(relayed);
  }

  private void relay(HttpExchange exchange) throws IOException {
    try (exchange) {
      String method = exchange.getRequestMethod();
      URI uri = exchange.getRequestURI();
      byte[] body;
      try (InputStream in = exchange.getRequestBody()) {
        body = in.readAllBytes();
      }
      HttpRequest.Builder request =
          HttpRequest.newBuilder(URI.create(target + uri.getRawPath() + query(uri)))
              .timeout(Duration.ofMinutes(5))
              .method(
                  method,
                  body.length == 0
                      ? HttpRequest.BodyPublishers.noBody()
                      : HttpRequest.BodyPublishers.ofByteArray(body));
      exchange
          .getRequestHeaders()
          .forEach(
              (name, values) -> {
                if (!HOP.contains(name.toLowerCase(Locale.ROOT))) {
                  values.forEach(value -> request.header(name, value));
                }
              });
      HttpResponse<String> response;
      try {
        response = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
      } catch (IOException | InterruptedException e) {
        if (e instanceof InterruptedException) {
          Thread.currentThread().interrupt();
        }
        violations.add(method + " " + uri + ": not forwarded: " + e);
        exchange.sendResponseHeaders(502, -1);
        return;
      }
      String requestBody = body.length == 0 ? null : new String(body, StandardCharsets.UTF_8);
      try {
        OpenApiContract.document()
            .check(
                new OpenApiContract.Exchange(
                    method,
                    uri.getRawPath(),
                    uri.getRawQuery(),
                    exchange.getRequestHeaders().getFirst("Content-Type"),
                    requestBody,
                    response.statusCode(),
                    response.headers().firstValue("Content-Type").orElse(null),
                    response.body()));
      } catch (AssertionError e) {
        violations.add(method + " " + uri.getRawPath() + ": " + e.getMessage());
      }
      relayed.add(method + " " + uri.getRawPath() + " → " + response.statusCode());
      response
          .headers()
          .map()
          .forEach(
              (name, values) -> {
                if (!name.startsWith(":") && !HOP.contains(name.toLowerCase(Locale.ROOT))) {
                  exchange.getResponseHeaders().put(name, values);
                }
              });
      byte[] answer = response.body().getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(response.statusCode(), answer.length == 0 ? -1 : answer.length);
      if (answer.length > 0) {
        try (OutputStream out = exchange.getResponseBody()) {
          out.write(answer);
        }
      }
    }
  }

  private static String query(URI uri) {
    return uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery();
  }

  @Override
  public void close() {
    server.stop(0);
    threads.close();
    http.close();
  }
}
