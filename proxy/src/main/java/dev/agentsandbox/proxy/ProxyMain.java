package dev.agentsandbox.proxy;

import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import picocli.CommandLine;

/** Entry point of the standalone proxy jar: {@code java -jar agent-sandbox-proxy.jar ...}. */
public final class ProxyMain {
  private ProxyMain() {}

  public static void main(String[] args) {
    System.exit(run(args));
  }

  /**
   * Runs the proxy and returns its exit code. The form the proxy image's launcher uses, exactly
   * {@code --policy FILE}, skips the command-line parser: picocli builds its model by reflection
   * from classes an AOT cache cannot hold (they are compiled for Java 5), which cost more start
   * time than everything else together (docs/benchmarks.md). Every other form goes through picocli.
   */
  static int run(String[] args) {
    if (args.length == 2 && args[0].equals("--policy")) {
      return runPolicyFile(args[1]);
    }
    return commandLine(new ProxyCommand()).execute(args);
  }

  /** What {@link #commandLine} does for {@code --policy FILE}, with the same exit codes. */
  private static int runPolicyFile(String file) {
    ProxyCommand command = new ProxyCommand();
    try {
      command.options().policy = Path.of(file);
    } catch (InvalidPathException e) {
      System.err.println(
          "agent-sandbox proxy: reading policy file " + Echo.of(file) + ": " + e.getReason());
      return ProxyCommand.EXIT_BAD_INPUT;
    }
    try {
      return command.call();
    } catch (RuntimeException e) {
      System.err.println("agent-sandbox proxy: failed: " + e);
      return ProxyCommand.EXIT_START_FAILED;
    }
  }

  /**
   * The command line with one-line errors: a usage mistake prints one line and exits with {@link
   * ProxyCommand#EXIT_BAD_INPUT}, never a usage dump or a stack trace.
   */
  public static CommandLine commandLine(ProxyCommand command) {
    CommandLine line = new CommandLine(command);
    line.setParameterExceptionHandler(
        (ex, args) -> {
          ex.getCommandLine()
              .getErr()
              .println("agent-sandbox proxy: " + ex.getMessage() + " (see --help)");
          return ProxyCommand.EXIT_BAD_INPUT;
        });
    line.setExecutionExceptionHandler(
        (ex, cmd, parsed) -> {
          cmd.getErr().println("agent-sandbox proxy: failed: " + ex);
          return ProxyCommand.EXIT_START_FAILED;
        });
    return line;
  }
}
