package dev.agentsandbox.mcp;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A tool call's arguments, read strictly: a missing or mistyped argument is a tool error naming it
 * ({@code invalid_arguments}), never a guess. The API checks the values themselves.
 */
final class Args {
  private final String tool;
  private final Map<String, Object> values;

  Args(String tool, Map<String, Object> values) {
    this.tool = tool;
    this.values = values == null ? Map.of() : values;
  }

  String string(String name) {
    return optionalString(name).orElseThrow(() -> invalid(name, "is required (a string)"));
  }

  Optional<String> optionalString(String name) {
    Object value = values.get(name);
    if (value == null) {
      return Optional.empty();
    }
    if (!(value instanceof String text)) {
      throw invalid(name, "must be a string");
    }
    return Optional.of(text);
  }

  /** A non-empty list of strings. */
  List<String> strings(String name) {
    Object value = values.get(name);
    if (!(value instanceof List<?> list) || list.isEmpty()) {
      throw invalid(name, "is required: a non-empty array of strings, such as [\"ls\", \"-l\"]");
    }
    List<String> out = new ArrayList<>();
    for (Object item : list) {
      if (!(item instanceof String text)) {
        throw invalid(name, "must hold only strings");
      }
      out.add(text);
    }
    return out;
  }

  /** An object of string values; empty when absent. */
  Map<String, String> stringMap(String name) {
    Object value = values.get(name);
    if (value == null) {
      return Map.of();
    }
    if (!(value instanceof Map<?, ?> map)) {
      throw invalid(name, "must be an object of string values");
    }
    Map<String, String> out = new LinkedHashMap<>();
    for (Map.Entry<?, ?> entry : map.entrySet()) {
      if (!(entry.getKey() instanceof String key) || !(entry.getValue() instanceof String text)) {
        throw invalid(name, "must be an object of string values");
      }
      out.put(key, text);
    }
    return out;
  }

  Optional<Long> optionalWhole(String name) {
    Object value = values.get(name);
    if (value == null) {
      return Optional.empty();
    }
    if (value instanceof Number number && number.doubleValue() == Math.rint(number.doubleValue())) {
      return Optional.of(number.longValue());
    }
    throw invalid(name, "must be a whole number");
  }

  private SandboxApiException invalid(String name, String problem) {
    return new SandboxApiException(400, "invalid_arguments", tool + ": " + name + " " + problem);
  }
}
