package dev.agentsandbox.cli;

import java.io.Console;
import java.util.Map;

/**
 * Whether a person is watching: colour only on a terminal and never with {@code NO_COLOR}
 * (https://no-color.org), progress lines only on a terminal. Decided once per process.
 */
final class Terminal {
  private static final String RESET = "\u001b[0m";

  private final boolean colour;
  private final boolean interactive;

  Terminal(boolean interactive, boolean colour) {
    this.interactive = interactive;
    this.colour = colour;
  }

  /** The process's own terminal, as the environment says. */
  static Terminal detect(Map<String, String> env) {
    boolean tty = isTerminal(System.console());
    String noColor = env.get("NO_COLOR");
    boolean dumb = "dumb".equals(env.get("TERM"));
    return new Terminal(tty, tty && !dumb && (noColor == null || noColor.isEmpty()));
  }

  /**
   * Whether standard input and output are a terminal. Up to Java 21 a console exists only then;
   * from Java 22 one always exists and {@code Console.isTerminal()} (called reflectively, since the
   * build targets 21) says.
   */
  static boolean isTerminal(Console console) {
    if (console == null) {
      return false;
    }
    try {
      return (Boolean) Console.class.getMethod("isTerminal").invoke(console);
    } catch (ReflectiveOperationException e) {
      return true;
    }
  }

  boolean interactive() {
    return interactive;
  }

  String red(String text) {
    return paint("31", text);
  }

  String yellow(String text) {
    return paint("33", text);
  }

  String green(String text) {
    return paint("32", text);
  }

  String dim(String text) {
    return paint("2", text);
  }

  String bold(String text) {
    return paint("1", text);
  }

  private String paint(String code, String text) {
    return colour ? "\u001b[" + code + "m" + text + RESET : text;
  }
}
