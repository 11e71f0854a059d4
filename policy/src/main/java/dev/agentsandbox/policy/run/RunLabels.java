package dev.agentsandbox.policy.run;

import dev.agentsandbox.policy.text.Bounded;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Checks a run request's labels (owner, task reference, engagement code, ...) against the syntax
 * Kubernetes requires of label keys and values, so that every backend can put them on every object
 * it creates, and against the sandbox's own keys, which a request may not set. Pure.
 *
 * <p>A key is an optional DNS-subdomain prefix of at most 253 characters and a {@code /}, then a
 * name of 1 to 63 characters; a name or value is alphanumeric at both ends with {@code -}, {@code
 * _} and {@code .} inside; a value may be empty.
 */
public final class RunLabels {
  /** Most labels one run may carry. */
  public static final int MAX_LABELS = 32;

  private static final Pattern NAME =
      Pattern.compile("[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?");
  private static final Pattern PREFIX =
      Pattern.compile(
          "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*");

  private RunLabels() {}

  /**
   * Every problem with {@code labels}, each prefixed with its JSON path under {@code labels}; empty
   * when they may be applied as they are.
   */
  public static List<String> problems(Map<String, String> labels) {
    List<String> problems = new ArrayList<>();
    if (labels.size() > MAX_LABELS) {
      problems.add("labels: at most " + MAX_LABELS + " labels (got " + labels.size() + ")");
    }
    labels.keySet().stream()
        .sorted()
        .forEach(
            key -> {
              String at = "labels." + shown(key);
              String keyProblem = keyProblem(key);
              if (keyProblem != null) {
                problems.add(at + ": " + keyProblem);
                return;
              }
              String value = labels.get(key);
              if (value == null) {
                problems.add(at + ": a value is required (an empty string is allowed)");
              } else if (!value.isEmpty() && !NAME.matcher(value).matches()) {
                problems.add(
                    at
                        + ": the value must be at most 63 characters, letters and digits at both"
                        + " ends, with '-', '_' and '.' inside");
              }
            });
    return List.copyOf(problems);
  }

  private static String keyProblem(String key) {
    if (key.startsWith("agent-sandbox.dev/") || key.equals("app.kubernetes.io/managed-by")) {
      return "this key is the sandbox's own and cannot be set by a run request";
    }
    int slash = key.indexOf('/');
    String name = slash < 0 ? key : key.substring(slash + 1);
    if (slash >= 0) {
      String prefix = key.substring(0, slash);
      if (prefix.isEmpty() || prefix.length() > 253 || !PREFIX.matcher(prefix).matches()) {
        return "the prefix before '/' must be a DNS subdomain of at most 253 characters";
      }
    }
    if (!NAME.matcher(name).matches()) {
      return "the name must be 1-63 characters, letters and digits at both ends, with '-', '_' and"
          + " '.' inside";
    }
    return null;
  }

  private static String shown(String key) {
    return Bounded.text(key, 80, Bounded.Escape.VISIBLE_ASCII);
  }
}
