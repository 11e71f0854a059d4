package dev.agentsandbox.server.http;

import dev.agentsandbox.server.ServerException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A request the API refuses, with its HTTP status, stable error code and a message a person can act
 * on. The root of the server module's exceptions; {@link ErrorMapper} maps every other exception to
 * one of these.
 */
public class ApiException extends ServerException {
  private static final long serialVersionUID = 1L;

  private final int status;
  private final String code;

  @SuppressWarnings("serial") // plain JSON-able values; never serialized in practice
  private final Map<String, Object> details;

  public ApiException(int status, String code, String message) {
    this(status, code, message, Map.of());
  }

  public ApiException(int status, String code, String message, Map<String, Object> details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = new LinkedHashMap<>(details);
  }

  public int status() {
    return status;
  }

  public String code() {
    return code;
  }

  /** Extra fields of the error body beside {@code error} and {@code message}. */
  public Map<String, Object> details() {
    return Map.copyOf(details);
  }

  public static ApiException badRequest(String message) {
    return new ApiException(400, "invalid_request", message);
  }
}
