package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.StringJoiner;

/**
 * A client of the admin API for one server and one token. Non-2xx answers become {@link
 * ApiCallException} carrying the server's error code and message.
 *
 * <p>Thread-safe (the JDK client is): {@code run} follows the output on one thread while it polls
 * the run's decisions on another.
 *
 * <p>Public for the drill ({@code dev.agentsandbox.cli.drill}), the one command with its own
 * package; it is made by {@link ApiConnection} alone.
 */
public final class AdminApi implements AutoCloseable {
  /** The feature's base path. */
  public static final String BASE = "/api/admin/platform/agent-sandbox";

  public static final String RUNS = BASE + "/runs";
  static final String EGRESS_POLICY = "/api/admin/platform/egress-policy";
  public static final String AUDIT = "/api/admin/platform/audit";

  /** Who the token presented is (its name, scopes and agents). */
  static final String TOKEN = "/api/admin/platform/token";

  private static final ObjectMapper JSON = new ObjectMapper();

  private final String base;
  private final String token;
  private final HttpClient http;

  AdminApi(String base, String token) {
    this.base = base.replaceAll("/+$", "");
    this.token = token;
    this.http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
  }

  /** The service's base URL, as given. */
  public String base() {
    return base;
  }

  /** The bearer token, for a client that sends it to {@link #base()} only ({@code mcp}). */
  String token() {
    return token;
  }

  /** An answer: status, the ETag if any, the body. */
  public record Answer(int status, String etag, String body) {
    public JsonNode json() throws IOException {
      return JSON.readTree(body);
    }
  }

  /** A path with query parameters; null values are left out. */
  public static String path(String path, Map<String, String> query) {
    StringJoiner joined = new StringJoiner("&", "?", "").setEmptyValue("");
    query.forEach(
        (name, value) -> {
          if (value != null) {
            joined.add(name + "=" + URLEncoder.encode(value, StandardCharsets.UTF_8));
          }
        });
    return path + joined;
  }

  public HttpRequest.Builder request(String path, Duration timeout) {
    return HttpRequest.newBuilder(URI.create(base + path))
        .timeout(timeout)
        .header("Authorization", "Bearer " + token);
  }

  /** Sends and returns the answer whatever its status. */
  public Answer exchange(HttpRequest request) throws IOException, InterruptedException {
    HttpResponse<String> response;
    try {
      response = http.send(request, HttpResponse.BodyHandlers.ofString());
    } catch (ConnectException e) {
      throw unreachable(request, e);
    }
    return new Answer(
        response.statusCode(), response.headers().firstValue("ETag").orElse(null), response.body());
  }

  /** Sends and returns the answer, or throws {@link ApiCallException} for a non-2xx one. */
  public Answer call(String what, HttpRequest request) throws IOException, InterruptedException {
    Answer answer = exchange(request);
    if (answer.status() / 100 != 2) {
      throw ApiCallException.of(what, answer);
    }
    return answer;
  }

  /** GET as JSON. */
  public JsonNode get(String what, String path) throws IOException, InterruptedException {
    return call(what, request(path, Duration.ofSeconds(30)).GET().build()).json();
  }

  /** A JSON body for POST or PUT. */
  public static HttpRequest.BodyPublisher json(Object body) throws IOException {
    return HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(body));
  }

  /**
   * Opens a run's output stream asking for each line tagged with its stream ({@code
   * application/x-ndjson}); the caller reads and closes the body, whichever type the server chose.
   */
  HttpResponse<InputStream> output(String what, String runId)
      throws IOException, InterruptedException {
    return open(what, RUNS + "/" + runId + "/output", Duration.ofHours(5), "application/x-ndjson");
  }

  /** Opens a streamed GET with its headers; the caller reads and closes the body. */
  HttpResponse<InputStream> open(String what, String path, Duration timeout)
      throws IOException, InterruptedException {
    return open(what, path, timeout, "*/*");
  }

  private HttpResponse<InputStream> open(String what, String path, Duration timeout, String accept)
      throws IOException, InterruptedException {
    return stream(what, request(path, timeout).header("Accept", accept).GET().build());
  }

  /**
   * Sends {@code request} and returns its answer as a stream (a step streamed as it runs, a file
   * read out of a session), or throws {@link ApiCallException} for a non-2xx one; the caller reads
   * and closes the body.
   */
  HttpResponse<InputStream> stream(String what, HttpRequest request)
      throws IOException, InterruptedException {
    HttpResponse<InputStream> response;
    try {
      response = http.send(request, HttpResponse.BodyHandlers.ofInputStream());
    } catch (ConnectException e) {
      throw unreachable(request, e);
    }
    if (response.statusCode() / 100 != 2) {
      String body;
      try (InputStream in = response.body()) {
        body = new String(in.readNBytes(64 * 1024), StandardCharsets.UTF_8);
      }
      throw ApiCallException.of(what, new Answer(response.statusCode(), null, body));
    }
    return response;
  }

  private static IOException unreachable(HttpRequest request, ConnectException cause) {
    return new IOException(
        "reach "
            + request.uri().getScheme()
            + "://"
            + request.uri().getAuthority()
            + ": connection refused (is agent-sandbox serve running there? check --url or"
            + " --context)",
        cause);
  }

  @Override
  public void close() {
    http.close();
  }
}
