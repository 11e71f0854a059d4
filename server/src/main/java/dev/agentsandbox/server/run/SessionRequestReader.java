package dev.agentsandbox.server.run;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.runs.session.ExecRequest;
import dev.agentsandbox.runs.session.SessionRequest;
import dev.agentsandbox.server.http.ApiException;
import dev.agentsandbox.server.http.Echo;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;

/**
 * Reads the bodies of {@code POST .../sessions} and {@code POST .../runs/{id}/exec}: each field's
 * type, with every problem at its JSON path, and unknown fields refused. What the values must be
 * (the environment screen, the idle time against the agent's ttl, the folder, the caps) the run
 * service decides.
 */
final class SessionRequestReader {
  private static final List<String> OPEN = List.of("agent", "env", "labels", "idle_seconds");
  private static final List<String> EXEC =
      List.of("command", "env", "cwd", "stdin", "timeout_seconds", "background");

  private SessionRequestReader() {}

  static SessionRequest open(JsonNode body) {
    List<Map<String, String>> problems = new ArrayList<>();
    object(body, OPEN, problems, "session");
    String agent = "";
    JsonNode agentNode = body.get("agent");
    if (agentNode == null || !agentNode.isTextual() || agentNode.asText().isEmpty()) {
      problems.add(problem("agent", "required: the agent's name as a string"));
    } else {
      agent = agentNode.asText();
    }
    Map<String, String> env = strings(body, "env", problems);
    Map<String, String> labels = strings(body, "labels", problems);
    OptionalInt idle = OptionalInt.empty();
    JsonNode idleNode = body.get("idle_seconds");
    if (idleNode != null && !idleNode.isNull()) {
      if (!idleNode.canConvertToInt() || !idleNode.isIntegralNumber() || idleNode.asInt() < 1) {
        problems.add(problem("idle_seconds", "must be a whole number of seconds, at least 1"));
      } else {
        idle = OptionalInt.of(idleNode.asInt());
      }
    }
    throwIfAny(problems, "session");
    return new SessionRequest(agent, env, labels, idle);
  }

  static ExecRequest exec(JsonNode body) {
    List<Map<String, String>> problems = new ArrayList<>();
    object(body, EXEC, problems, "step");
    List<String> command = new ArrayList<>();
    JsonNode commandNode = body.get("command");
    if (commandNode == null || !commandNode.isArray() || commandNode.isEmpty()) {
      problems.add(
          problem(
              "command", "required: a non-empty array of strings, such as [\"pytest\", \"-q\"]"));
    } else {
      for (int i = 0; i < commandNode.size(); i++) {
        JsonNode arg = commandNode.get(i);
        if (!arg.isTextual()) {
          problems.add(problem("command[" + i + "]", "must be a string"));
        } else {
          command.add(arg.asText());
        }
      }
    }
    Map<String, String> env = strings(body, "env", problems);
    String cwd = text(body, "cwd", "/workspace", problems);
    String stdin = text(body, "stdin", "", problems);
    int timeout = ExecRequest.DEFAULT_TIMEOUT_SECONDS;
    JsonNode timeoutNode = body.get("timeout_seconds");
    if (timeoutNode != null && !timeoutNode.isNull()) {
      if (!timeoutNode.isIntegralNumber() || !timeoutNode.canConvertToInt()) {
        problems.add(
            problem(
                "timeout_seconds",
                "must be a whole number of seconds, 1 to " + ExecRequest.MAX_TIMEOUT_SECONDS));
      } else {
        timeout = timeoutNode.asInt();
      }
    }
    boolean background = false;
    JsonNode backgroundNode = body.get("background");
    if (backgroundNode != null && !backgroundNode.isNull()) {
      if (!backgroundNode.isBoolean()) {
        problems.add(problem("background", "must be true or false"));
      } else {
        background = backgroundNode.asBoolean();
      }
    }
    throwIfAny(problems, "step");
    return new ExecRequest(command, env, cwd, stdin, timeout, background);
  }

  private static void object(
      JsonNode body, List<String> fields, List<Map<String, String>> problems, String what) {
    if (!body.isObject()) {
      throwIfAny(List.of(problem("", "the body must be a JSON object")), what);
    }
    Set<String> known = Set.copyOf(fields);
    for (Iterator<String> names = body.fieldNames(); names.hasNext(); ) {
      String name = names.next();
      if (!known.contains(name)) {
        problems.add(
            problem(
                Echo.bounded(name), "unknown field (known: " + String.join(", ", fields) + ")"));
      }
    }
  }

  private static String text(
      JsonNode body, String field, String absent, List<Map<String, String>> problems) {
    JsonNode node = body.get(field);
    if (node == null || node.isNull()) {
      return absent;
    }
    if (!node.isTextual()) {
      problems.add(problem(field, "must be a string"));
      return absent;
    }
    return node.asText();
  }

  /** An optional object of string values ({@code env}, {@code labels}). */
  private static Map<String, String> strings(
      JsonNode body, String field, List<Map<String, String>> problems) {
    Map<String, String> values = new LinkedHashMap<>();
    JsonNode node = body.get(field);
    if (node != null && !node.isNull()) {
      if (!node.isObject()) {
        problems.add(problem(field, "must be an object of string values"));
      } else {
        node.fields()
            .forEachRemaining(
                e -> {
                  if (!e.getValue().isTextual()) {
                    problems.add(
                        problem(
                            field + "." + Echo.bounded(e.getKey()), "the value must be a string"));
                  } else {
                    values.put(e.getKey(), e.getValue().asText());
                  }
                });
      }
    }
    return values;
  }

  private static Map<String, String> problem(String path, String message) {
    return Map.of("path", path, "message", message);
  }

  private static void throwIfAny(List<Map<String, String>> problems, String what) {
    if (problems.isEmpty()) {
      return;
    }
    Map<String, String> first = problems.get(0);
    String where = first.get("path").isEmpty() ? "" : first.get("path") + ": ";
    throw new ApiException(
        400,
        "invalid_request",
        "read the "
            + what
            + " request: "
            + where
            + first.get("message")
            + (problems.size() > 1 ? " (and " + (problems.size() - 1) + " more)" : ""),
        Map.of("problems", problems));
  }
}
