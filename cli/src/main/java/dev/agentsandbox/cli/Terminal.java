package dev.agentsandbox.cli;

import java.io.Console;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * Whether a person is watching: colour only on a terminal and never with {@code NO_COLOR}
 * (https://no-color.org), progress lines only on a terminal, and, for each of standard output and
 * standard error on its own, whether what a workload wrote must be escaped before it reaches a
 * terminal ({@link TerminalText}). Decided once per process.
 */
final class Terminal {
  private static final String RESET = "\u001b[0m";

  private final boolean colour;
  private final boolean interactive;
  private final boolean stdoutTerminal;
  private final boolean stderrTerminal;

  Terminal(boolean interactive, boolean colour) {
    this(interactive, colour, interactive, interactive);
  }

  Terminal(boolean interactive, boolean colour, boolean stdoutTerminal, boolean stderrTerminal) {
    this.interactive = interactive;
    this.colour = colour;
    this.stdoutTerminal = stdoutTerminal;
    this.stderrTerminal = stderrTerminal;
  }

  /** The process's own terminal, as the environment says. */
  static Terminal detect(Map<String, String> env) {
    boolean tty = isTerminal(System.console());
    String noColor = env.get("NO_COLOR");
    boolean dumb = "dumb".equals(env.get("TERM"));
    return new Terminal(
        tty,
        tty && !dumb && (noColor == null || noColor.isEmpty()),
        isTerminal(1, tty),
        isTerminal(2, tty));
  }

  /**
   * Whether file descriptor {@code fd} of this process is a terminal: on Linux, what {@code
   * /proc/self/fd/N} links to (a pseudo-terminal, a virtual console or a serial line), so standard
   * output and standard error are told apart ({@code run ... 2>log} escapes stdout only); where
   * {@code /proc} is missing, {@code fallback}.
   */
  static boolean isTerminal(int fd, boolean fallback) {
    Path link = Path.of("/proc/self/fd/" + fd);
    try {
      String target = Files.readSymbolicLink(link).toString();
      return target.startsWith("/dev/pts/")
          || target.startsWith("/dev/tty")
          || target.equals("/dev/console");
    } catch (IOException | UnsupportedOperationException | SecurityException e) {
      return fallback;
    }
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

  /** Whether the workload's standard output is shown on a terminal here (and so escaped). */
  boolean stdoutTerminal() {
    return stdoutTerminal;
  }

  /** Whether the workload's standard error is shown on a terminal here (and so escaped). */
  boolean stderrTerminal() {
    return stderrTerminal;
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
