package dev.agentsandbox.policy.http;

import dev.agentsandbox.policy.text.Bounded;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * One rule of an inspected host: the methods it allows and the paths it allows them on, written
 * {@code GET,HEAD /repos/acme/**} ({@code *} for every {@link Method}). Immutable and thread-safe.
 *
 * @param methods the methods allowed, never empty
 * @param path the paths they are allowed on
 */
public record RequestRule(Set<Method> methods, PathPattern path) {
  private static final int MAX_LENGTH = 1100;

  public RequestRule {
    Objects.requireNonNull(path, "path");
    if (methods.isEmpty()) {
      throw new IllegalArgumentException("a rule names at least one method");
    }
    methods = java.util.Collections.unmodifiableSet(EnumSet.copyOf(methods));
  }

  /**
   * Parses a rule as an operator writes it: methods separated by commas, one space, a path pattern.
   *
   * @throws IllegalArgumentException with a message fit to show after the rule's JSON path
   */
  public static RequestRule parse(String raw) {
    if (raw.length() > MAX_LENGTH) {
      throw new IllegalArgumentException("a rule is at most " + MAX_LENGTH + " characters");
    }
    int space = raw.indexOf(' ');
    if (space <= 0 || raw.indexOf(' ', space + 1) >= 0) {
      throw new IllegalArgumentException(
          "a rule is METHODS PATH with one space between them (such as GET,HEAD /repos/acme/**)");
    }
    String methodPart = raw.substring(0, space);
    EnumSet<Method> methods = EnumSet.noneOf(Method.class);
    if (methodPart.equals("*")) {
      methods = EnumSet.allOf(Method.class);
    } else {
      for (String token : methodPart.split(",", -1)) {
        Method method =
            Method.of(token)
                .orElseThrow(
                    () ->
                        new IllegalArgumentException(
                            "'"
                                + echo(token)
                                + "' is not a method a rule may name ("
                                + EnumSet.allOf(Method.class).stream()
                                    .map(Enum::name)
                                    .collect(Collectors.joining(", "))
                                + ", or * alone for all of them)"));
        if (!methods.add(method)) {
          throw new IllegalArgumentException(method + " is named twice");
        }
      }
    }
    return new RequestRule(methods, PathPattern.parse(raw.substring(space + 1)));
  }

  /** Whether this rule allows {@code method} on the decoded segments {@code path}. */
  public boolean allows(Method method, java.util.List<String> path) {
    return methods.contains(method) && this.path.matches(path);
  }

  /** The rule as an operator writes it, which {@link #parse} reads back unchanged. */
  @Override
  public String toString() {
    String names =
        methods.size() == Method.values().length
            ? "*"
            : methods.stream().map(Enum::name).collect(Collectors.joining(","));
    return names + " " + path;
  }

  private static String echo(String raw) {
    return Bounded.text(raw, 32, Bounded.Escape.VISIBLE_ASCII);
  }
}
