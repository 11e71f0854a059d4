package dev.agentsandbox.cli;

import java.util.function.Supplier;

/**
 * A setting of the command line, resolved one way everywhere: the option where it is given, else
 * its environment variable, else its default (a blank value counts as not given).
 */
final class Setting {
  private Setting() {}

  /** The value in force; {@code fallback} is asked only when neither option nor variable is set. */
  static String of(String option, String variable, Supplier<String> fallback) {
    if (option != null && !option.isBlank()) {
      return option;
    }
    String value = System.getenv(variable);
    return value == null || value.isBlank() ? fallback.get() : value;
  }
}
