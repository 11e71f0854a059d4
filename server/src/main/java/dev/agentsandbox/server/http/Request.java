package dev.agentsandbox.server.http;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import dev.agentsandbox.store.TokenInfo;
import java.io.IOException;
import java.io.InputStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * One request as handlers see it: the routed path parameters, the query, headers, the authenticated
 * token and the JSON body (size- and media-type-checked).
 */
public final class Request {
  private final HttpExchange exchange;
  private final Map<String, String> params;
  private final ObjectMapper mapper;
  private final long maxBodyBytes;
  private final TokenInfo principal;
  private final Map<String, String> query;

  Request(
      HttpExchange exchange,
      Map<String, String> params,
      ObjectMapper mapper,
      long maxBodyBytes,
      TokenInfo principal) {
    this.exchange = exchange;
    this.params = Map.copyOf(params);
    this.mapper = mapper;
    this.maxBodyBytes = maxBodyBytes;
    this.principal = principal;
    this.query = parseQuery(exchange.getRequestURI().getRawQuery());
  }

  /** The token that authenticated this request; routes without a scope have none. */
  public TokenInfo principal() {
    if (principal == null) {
      throw new IllegalStateException("a public route has no principal");
    }
    return principal;
  }

  /** The path as requested and matched: raw, without the query. */
  public String path() {
    return exchange.getRequestURI().getRawPath();
  }

  public String pathParam(String name) {
    return params.get(name);
  }

  public Optional<String> header(String name) {
    return Optional.ofNullable(exchange.getRequestHeaders().getFirst(name));
  }

  /** The query parameters, each given at most once. */
  public Map<String, String> query() {
    return query;
  }

  /**
   * Checks that the query names only {@code known} parameters.
   *
   * @throws ApiException 400 naming the first unknown parameter
   */
  public void onlyQueryParams(Set<String> known) {
    for (String name : query.keySet()) {
      if (!known.contains(name)) {
        throw ApiException.badRequest(
            "unknown query parameter '"
                + Echo.bounded(name)
                + "' (known: "
                + String.join(", ", known.stream().sorted().toList())
                + ")");
      }
    }
  }

  /**
   * Reads the body as one JSON value.
   *
   * @throws ApiException 415 unless the body is JSON (see {@link #checkMediaType}), 413 when it is
   *     larger than the limit, 400 when it is not exactly one well-formed JSON value
   */
  public JsonNode jsonBody() throws IOException {
    long declared = declaredLength();
    if (declared > maxBodyBytes) {
      throw tooLarge();
    }
    byte[] body;
    try (InputStream in = exchange.getRequestBody()) {
      body = in.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, maxBodyBytes + 1));
    }
    if (body.length > maxBodyBytes) {
      throw tooLarge();
    }
    checkMediaType(body);
    if (body.length == 0) {
      throw new ApiException(
          400, "malformed_json", "read the request body: it is empty (send a JSON object)");
    }
    try {
      JsonNode node = mapper.readTree(body);
      if (node == null || node.isMissingNode()) {
        throw new ApiException(400, "malformed_json", "read the request body: no JSON value");
      }
      return node;
    } catch (JacksonException e) {
      // The parser's own message can quote the body; say only where it failed.
      String where =
          e.getLocation() == null
              ? ""
              : " at line "
                  + e.getLocation().getLineNr()
                  + ", column "
                  + e.getLocation().getColumnNr();
      throw new ApiException(
          400,
          "malformed_json",
          "read the request body: not well-formed JSON" + where + " (" + kindOf(e) + ")");
    }
  }

  /**
   * Accepts {@code application/json}, and a JSON object or array labelled {@code
   * application/x-www-form-urlencoded}: that is what {@code curl -d} sends when no type is given,
   * and the feature page's own commands are written that way. Bearer tokens, not cookies,
   * authenticate every call, so a form-typed body gains a cross-site page nothing. Anything else is
   * 415.
   */
  private void checkMediaType(byte[] body) {
    String type = header("Content-Type").orElse("");
    String mediaType = type.split(";", 2)[0].trim().toLowerCase(Locale.ROOT);
    if (mediaType.equals("application/json")) {
      return;
    }
    if (mediaType.equals("application/x-www-form-urlencoded") && looksLikeJson(body)) {
      return;
    }
    throw new ApiException(
        415,
        "unsupported_media_type",
        "read the request body: Content-Type is "
            + (type.isEmpty() ? "missing" : "'" + Echo.bounded(type) + "'")
            + " (send Content-Type: application/json; with curl add -H 'Content-Type:"
            + " application/json')");
  }

  private static boolean looksLikeJson(byte[] body) {
    for (byte b : body) {
      if (b == ' ' || b == '\t' || b == '\n' || b == '\r') {
        continue;
      }
      return b == '{' || b == '[';
    }
    return false;
  }

  private static String kindOf(JacksonException e) {
    String message = e.getOriginalMessage() == null ? "" : e.getOriginalMessage();
    if (message.startsWith("Duplicate field")) {
      return "a field appears twice";
    }
    if (message.contains("trailing token")) {
      return "more than one JSON value";
    }
    return "check quotes, commas and brackets";
  }

  /**
   * The request body as it arrives, for the endpoints whose bodies are not JSON and may pass the
   * JSON limit (a session's files): the caller bounds what it reads.
   */
  public InputStream rawBody() {
    return exchange.getRequestBody();
  }

  /** The body's media type, lower case and without parameters; empty when none was sent. */
  public String mediaType() {
    return header("Content-Type").orElse("").split(";", 2)[0].trim().toLowerCase(Locale.ROOT);
  }

  /** The declared {@code Content-Length}, or -1 when there is none (a chunked body). */
  public long declaredLength() {
    String length = exchange.getRequestHeaders().getFirst("Content-Length");
    if (length == null) {
      return -1;
    }
    try {
      return Long.parseLong(length.trim());
    } catch (NumberFormatException e) {
      throw ApiException.badRequest("Content-Length is not a number");
    }
  }

  private ApiException tooLarge() {
    return new ApiException(
        413,
        "body_too_large",
        "read the request body: larger than " + maxBodyBytes + " bytes (send a smaller document)");
  }

  private static Map<String, String> parseQuery(String raw) {
    Map<String, String> query = new LinkedHashMap<>();
    if (raw == null || raw.isEmpty()) {
      return query;
    }
    for (String pair : raw.split("&")) {
      if (pair.isEmpty()) {
        continue;
      }
      int eq = pair.indexOf('=');
      String name = decode(eq < 0 ? pair : pair.substring(0, eq));
      String value = eq < 0 ? "" : decode(pair.substring(eq + 1));
      if (query.putIfAbsent(name, value) != null) {
        throw ApiException.badRequest(
            "query parameter '" + Echo.bounded(name) + "' is given twice (give it once)");
      }
    }
    return Map.copyOf(query);
  }

  private static String decode(String text) {
    try {
      return URLDecoder.decode(text, StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      throw ApiException.badRequest("the query is not well-formed percent-encoding");
    }
  }
}
