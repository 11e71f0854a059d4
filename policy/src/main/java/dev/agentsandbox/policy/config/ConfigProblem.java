package dev.agentsandbox.policy.config;

import java.util.Objects;

/**
 * One thing wrong with a configuration document, at a JSON path such as {@code
 * agents.helper.allow[2]}.
 *
 * @param path where the problem is; the empty string for the document itself
 * @param message what is wrong and, where one exists, what to write instead
 */
public record ConfigProblem(String path, String message) {
  public ConfigProblem {
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(message, "message");
  }

  @Override
  public String toString() {
    return path.isEmpty() ? message : path + ": " + message;
  }
}
