package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.MissingNode;
import dev.agentsandbox.policy.text.Bounded;
import java.io.IOException;

/** The admin API refused a request: its status, error code, message and whole error body. */
final class ApiCallException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private static final ObjectMapper JSON = new ObjectMapper();

  private final int status;
  private final String code;
  private final transient JsonNode body;

  private ApiCallException(String message, int status, String code, JsonNode body) {
    super(message);
    this.status = status;
    this.code = code;
    this.body = body;
  }

  static ApiCallException of(String what, AdminApi.Answer answer) {
    JsonNode body;
    try {
      body = JSON.readTree(answer.body());
    } catch (IOException e) {
      body = MissingNode.getInstance();
    }
    if (body == null) {
      body = MissingNode.getInstance();
    }
    String code = body.path("error").asText("http_" + answer.status());
    String message =
        body.path("message").asText(Bounded.text(answer.body(), 200, Bounded.Escape.ONE_LINE));
    StringBuilder text =
        new StringBuilder(what).append(": ").append(message).append(" (").append(code);
    if (body.path("missing_scope").isTextual()) {
      text.append(", the token lacks ").append(body.path("missing_scope").asText());
    }
    text.append(')');
    for (JsonNode problem : body.path("problems")) {
      text.append(System.lineSeparator())
          .append("  ")
          .append(problem.path("path").asText(problem.path("backend").asText("")))
          .append(": ")
          .append(problem.path("message").asText(problem.toString()));
    }
    return new ApiCallException(text.toString(), answer.status(), code, body);
  }

  int status() {
    return status;
  }

  String code() {
    return code;
  }

  JsonNode body() {
    return body;
  }
}
