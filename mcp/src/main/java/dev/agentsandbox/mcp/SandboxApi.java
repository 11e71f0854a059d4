package dev.agentsandbox.mcp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The admin API as the MCP tools use it, for one base URL and one bearer token: every call is an
 * ordinary API request, so the token's scopes and agents apply exactly as they do to any client. An
 * answer other than 2xx becomes a {@link SandboxApiException} with the API's code and message.
 * Thread-safe (the JDK client is).
 */
public final class SandboxApi {
  static final String FEATURE = "/api/admin/platform/agent-sandbox";
  static final String RUNS = FEATURE + "/runs";
  static final String TOKEN = "/api/admin/platform/token";

  /** The run id alphabet: an id a model wrote is checked before any path is built from it. */
  private static final Pattern RUN_ID = Pattern.compile("[a-z0-9]{1,32}");

  /** Longer than any run or step may last (4 hours), so the server's own deadline decides. */
  private static final Duration LONGEST = Duration.ofHours(4).plusMinutes(5);

  private static final Duration SHORT = Duration.ofSeconds(60);

  private final ObjectMapper json;
  private final HttpClient http;
  private final String base;
  private final String token;

  /**
   * @param base the control plane's URL ({@code http://127.0.0.1:8080})
   * @param token the bearer token, sent only to {@code base}
   */
  public SandboxApi(URI base, String token, HttpClient http, ObjectMapper json) {
    this.base = base.toString().replaceAll("/+$", "");
    this.token = Objects.requireNonNull(token, "token");
    this.http = http;
    this.json = json;
  }

  /** A client with its own JDK HTTP client (10 s to connect). */
  public static SandboxApi connect(URI base, String token) {
    return new SandboxApi(
        base,
        token,
        HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build(),
        new ObjectMapper());
  }

  /** {@code GET /api/admin/platform/token}: who the token is and which agents it may touch. */
  public JsonNode self() {
    return send(request(TOKEN, SHORT).GET(), "read the token");
  }

  /** {@code GET .../agent-sandbox}: the configuration (a limited token's agents only). */
  public JsonNode configuration() {
    return send(request(FEATURE, SHORT).GET(), "read the configuration");
  }

  /** {@code POST .../run}: runs a command in a sandbox of its own and answers when it has ended. */
  public JsonNode run(ObjectNode body) {
    return send(post(FEATURE + "/run", body, LONGEST), "run a command");
  }

  /** {@code POST .../sessions}: opens a session once its sandbox is ready for a step. */
  public JsonNode openSession(ObjectNode body) {
    return send(post(FEATURE + "/sessions", body, SHORT.multipliedBy(5)), "open a session");
  }

  /** {@code POST .../runs/{id}/exec}: runs one step and answers its result. */
  public JsonNode exec(String runId, ObjectNode body) {
    return send(post(run(runId) + "/exec", body, LONGEST), "run a step in session " + runId);
  }

  /** {@code PUT .../runs/{id}/files?path=P}: writes one file. */
  public JsonNode writeFile(String runId, String path, byte[] content) {
    HttpRequest.Builder put =
        request(run(runId) + "/files?path=" + encode(path), SHORT.multipliedBy(5))
            .header("Content-Type", "application/octet-stream")
            .PUT(HttpRequest.BodyPublishers.ofByteArray(content));
    return send(put, "write " + path + " in session " + runId);
  }

  /** {@code GET .../runs/{id}/files?path=P}: one file's bytes. */
  public byte[] readFile(String runId, String path) {
    HttpRequest.Builder get =
        request(run(runId) + "/files?path=" + encode(path), SHORT.multipliedBy(5))
            .header("Accept", "application/octet-stream")
            .GET();
    return exchange(get, "read " + path + " in session " + runId).body();
  }

  /**
   * {@code GET .../runs/{id}/files?path=P} as {@code application/json}: a folder's listing. A file
   * at {@code P} is answered with its bytes whatever {@code Accept} asks, so an answer that is not
   * JSON is a file: refused as the API refuses a file where a folder was asked for, its bytes
   * discarded unread.
   */
  public JsonNode listFiles(String runId, String path) {
    String action = "list " + path + " in session " + runId;
    HttpRequest.Builder get =
        request(run(runId) + "/files?path=" + encode(path), SHORT)
            .header("Accept", "application/json")
            .GET();
    HttpResponse<byte[]> response =
        exchange(
            get,
            action,
            info ->
                info.statusCode() / 100 == 2 && !isJson(info.headers())
                    ? HttpResponse.BodySubscribers.replacing(new byte[0])
                    : HttpResponse.BodySubscribers.ofByteArray());
    if (!isJson(response.headers())) {
      ObjectNode body = json.createObjectNode();
      body.put("error", "path_refused");
      body.put("reason", "wrong-kind");
      body.put(
          "message",
          action + ": it is a file, not a folder (read it with read_file, or list its folder)");
      throw SandboxApiException.of(action, 400, body);
    }
    return parse(response.body(), action);
  }

  private static boolean isJson(java.net.http.HttpHeaders headers) {
    return headers
        .firstValue("Content-Type")
        .map(type -> type.toLowerCase(java.util.Locale.ROOT).startsWith("application/json"))
        .orElse(false);
  }

  /** {@code DELETE .../runs/{id}}: closes a session and answers its result. */
  public JsonNode close(String runId) {
    return send(request(run(runId), SHORT.multipliedBy(5)).DELETE(), "close session " + runId);
  }

  /** A JSON object to fill in as a request body. */
  public ObjectNode object() {
    return json.createObjectNode();
  }

  private static String run(String runId) {
    if (runId == null || !RUN_ID.matcher(runId).matches()) {
      throw new SandboxApiException(
          400,
          "invalid_arguments",
          "name a run: "
              + (runId == null ? "no run_id was given" : "'" + Texts.bounded(runId) + "'")
              + " is not a run id (1 to 32 lower-case letters and digits, as open_session"
              + " answered)");
    }
    return RUNS + "/" + runId;
  }

  private static String encode(String value) {
    return URLEncoder.encode(value, StandardCharsets.UTF_8).replace("+", "%20");
  }

  private HttpRequest.Builder post(String path, ObjectNode body, Duration timeout) {
    try {
      return request(path, timeout)
          .header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofByteArray(json.writeValueAsBytes(body)));
    } catch (IOException e) {
      throw new SandboxApiException(0, "internal_error", "write the request: " + e.getMessage());
    }
  }

  private HttpRequest.Builder request(String path, Duration timeout) {
    return HttpRequest.newBuilder(URI.create(base + path))
        .timeout(timeout)
        .header("Authorization", "Bearer " + token)
        .header("Accept", "application/json");
  }

  private JsonNode send(HttpRequest.Builder request, String action) {
    return parse(exchange(request, action).body(), action);
  }

  private JsonNode parse(byte[] body, String action) {
    try {
      return json.readTree(body);
    } catch (IOException e) {
      throw new SandboxApiException(
          502, "internal_error", action + ": the control plane's answer is not JSON");
    }
  }

  private HttpResponse<byte[]> exchange(HttpRequest.Builder request, String action) {
    return exchange(request, action, HttpResponse.BodyHandlers.ofByteArray());
  }

  private HttpResponse<byte[]> exchange(
      HttpRequest.Builder request, String action, HttpResponse.BodyHandler<byte[]> handler) {
    HttpResponse<byte[]> response;
    try {
      response = http.send(request.build(), handler);
    } catch (IOException e) {
      throw new SandboxApiException(
          0,
          "unreachable",
          action
              + ": the control plane at "
              + base
              + " did not answer ("
              + e.getClass().getSimpleName()
              + (e.getMessage() == null ? "" : ": " + e.getMessage())
              + "; is serve running there?)");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new SandboxApiException(0, "interrupted", action + ": interrupted");
    }
    if (response.statusCode() / 100 != 2) {
      throw SandboxApiException.of(action, response.statusCode(), response.body(), json);
    }
    return response;
  }
}
