package dev.agentsandbox.proxy;

import picocli.CommandLine;

/** Entry point of the standalone proxy jar: {@code java -jar agent-sandbox-proxy.jar ...}. */
public final class ProxyMain {
  private ProxyMain() {}

  public static void main(String[] args) {
    System.exit(commandLine(new ProxyCommand()).execute(args));
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
