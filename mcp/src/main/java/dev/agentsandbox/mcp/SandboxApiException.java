package dev.agentsandbox.mcp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * The admin API refused or failed a tool's request: its status, its stable {@code error} code and
 * its message, as the API said them; the tool answers them as a tool error. Transport failures have
 * status 0 and the code {@code unreachable}.
 */
public final class SandboxApiException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int status;
  private final String code;
  private final transient JsonNode body;

  public SandboxApiException(int status, String code, String message) {
    this(status, code, message, null);
  }

  private SandboxApiException(int status, String code, String message, JsonNode body) {
    super(message);
    this.status = status;
    this.code = code;
    this.body = body;
  }

  /** A refusal said in the API's own form ({@code error}, {@code message}, its other fields). */
  static SandboxApiException of(String action, int status, JsonNode body) {
    return new SandboxApiException(
        status, body.path("error").asText(), body.path("message").asText(action), body);
  }

  /** The API's error answer, or a stand-in naming the status when it was not the API's JSON. */
  static SandboxApiException of(String action, int status, byte[] answer, ObjectMapper json) {
    try {
      JsonNode body = json.readTree(answer);
      if (body != null && body.path("error").isTextual()) {
        return new SandboxApiException(
            status, body.get("error").asText(), body.path("message").asText(action), body);
      }
    } catch (IOException e) {
      // Not the API's JSON (a proxy in between, an old server): said below with the status.
    }
    return new SandboxApiException(
        status,
        "http_" + status,
        action
            + ": HTTP "
            + status
            + " "
            + Texts.bounded(new String(answer, StandardCharsets.UTF_8)));
  }

  /** The HTTP status, or 0 when the control plane did not answer. */
  public int status() {
    return status;
  }

  /** The API's {@code error} code ({@code run_not_found}, {@code agent_not_listed}, ...). */
  public String code() {
    return code;
  }

  /** The API's whole error body when it sent one (its {@code problems}, {@code missing_scope}). */
  public JsonNode body() {
    return body;
  }
}
