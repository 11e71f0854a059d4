package dev.agentsandbox.server.run;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.runs.RunRequest;
import dev.agentsandbox.server.http.ApiException;
import dev.agentsandbox.server.http.Echo;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads the body of {@code plan}, {@code run} and {@code runs}: {@code {"agent": "helper",
 * "command": ["python", "job.py"], "env": {"K": "V"}}}. Every problem is reported with its JSON
 * path; unknown fields are refused, so a typo such as {@code "cmd"} is not silently ignored.
 */
final class RunRequestReader {
  private static final Set<String> FIELDS = Set.of("agent", "command", "env", "labels");

  private RunRequestReader() {}

  static RunRequest read(JsonNode body) {
    List<Map<String, String>> problems = new ArrayList<>();
    if (!body.isObject()) {
      throw invalid(List.of(problem("", "the body must be a JSON object")));
    }
    Iterator<String> names = body.fieldNames();
    while (names.hasNext()) {
      String name = names.next();
      if (!FIELDS.contains(name)) {
        problems.add(
            problem(Echo.bounded(name), "unknown field (known: agent, command, env, labels)"));
      }
    }
    String agent = "";
    JsonNode agentNode = body.get("agent");
    if (agentNode == null || !agentNode.isTextual() || agentNode.asText().isEmpty()) {
      problems.add(problem("agent", "required: the agent's name as a string"));
    } else {
      agent = agentNode.asText();
    }
    List<String> command = new ArrayList<>();
    JsonNode commandNode = body.get("command");
    if (commandNode == null || !commandNode.isArray() || commandNode.isEmpty()) {
      problems.add(
          problem(
              "command",
              "required: a non-empty array of strings, such as [\"python\", \"job.py\"]"));
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
    Map<String, String> labels = strings(body, "labels", problems);
    if (!problems.isEmpty()) {
      throw invalid(problems);
    }
    return new RunRequest(agent, command, env, labels);
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

  private static ApiException invalid(List<Map<String, String>> problems) {
    Map<String, String> first = problems.get(0);
    String where = first.get("path").isEmpty() ? "" : first.get("path") + ": ";
    return new ApiException(
        400,
        "invalid_request",
        "read the run request: "
            + where
            + first.get("message")
            + (problems.size() > 1 ? " (and " + (problems.size() - 1) + " more)" : ""),
        Map.of("problems", problems));
  }
}
