package dev.agentsandbox.server.http;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What a handler answers: status, content type, extra headers and the body bytes.
 *
 * @param status the HTTP status
 * @param contentType the body's media type
 * @param headers extra headers (such as {@code ETag})
 * @param body the body
 */
public record Response(
    int status,
    String contentType,
    Map<String, String> headers,
    byte[] body,
    StreamingBody stream) {
  public static final String JSON = "application/json";

  /** Writes a body whose length is not known up front (sent chunked). */
  @FunctionalInterface
  public interface StreamingBody {
    void writeTo(OutputStream out) throws IOException;
  }

  public Response {
    headers = Map.copyOf(headers);
  }

  public Response(int status, String contentType, Map<String, String> headers, byte[] body) {
    this(status, contentType, headers, body, null);
  }

  /** A response whose body is written as it is produced, such as a run's live output. */
  public static Response streaming(int status, String contentType, StreamingBody stream) {
    return new Response(status, contentType, Map.of(), new byte[0], stream);
  }

  public static Response json(int status, byte[] body) {
    return new Response(status, JSON, Map.of(), body);
  }

  public static Response text(int status, String contentType, String body) {
    return new Response(status, contentType, Map.of(), body.getBytes(StandardCharsets.UTF_8));
  }

  /** This response with one more header. */
  public Response withHeader(String name, String value) {
    Map<String, String> more = new LinkedHashMap<>(headers);
    more.put(name, value);
    return new Response(status, contentType, more, body, stream);
  }
}
