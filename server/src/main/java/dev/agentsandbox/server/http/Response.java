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
 * @param stream a body written as it is produced, instead of {@code body}; may be null
 * @param streamLength the streamed body's length when known up front (sent with {@code
 *     Content-Length}), or -1 (sent chunked)
 */
public record Response(
    int status,
    String contentType,
    Map<String, String> headers,
    byte[] body,
    StreamingBody stream,
    long streamLength) {
  public static final String JSON = "application/json";

  /** Writes a body whose length is not known up front (sent chunked). */
  @FunctionalInterface
  public interface StreamingBody {
    void writeTo(OutputStream out) throws IOException;
  }

  public Response {
    headers = Map.copyOf(headers);
    if (streamLength < -1 || (stream == null && streamLength != -1)) {
      throw new IllegalArgumentException("a stream's length is -1 (unknown) or what it sends");
    }
  }

  public Response(int status, String contentType, Map<String, String> headers, byte[] body) {
    this(status, contentType, headers, body, null, -1);
  }

  /** A response whose body is written as it is produced, such as a run's live output. */
  public static Response streaming(int status, String contentType, StreamingBody stream) {
    return new Response(status, contentType, Map.of(), new byte[0], stream, -1);
  }

  /**
   * A response whose body of a known length is written from a stream (a file spooled whole), sent
   * with its {@code Content-Length}.
   */
  public static Response streaming(
      int status, String contentType, long length, StreamingBody stream) {
    if (length < 0) {
      throw new IllegalArgumentException("a known length is not negative: " + length);
    }
    return new Response(status, contentType, Map.of(), new byte[0], stream, length);
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
    return new Response(status, contentType, more, body, stream, streamLength);
  }
}
