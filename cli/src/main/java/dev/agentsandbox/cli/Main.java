package dev.agentsandbox.cli;

import dev.agentsandbox.proxy.ProxyCommand;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code agent-sandbox} command. Exit codes: 0 success, 1 the operation failed (store
 * unreachable, audit chain broken, token name taken...), 2 the command line was wrong.
 */
@Command(
    name = "agent-sandbox",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description =
        "Runs AI agents' workloads in per-run sandboxes fenced by a default-deny egress proxy.",
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "0:success",
      "1:the operation failed (the message says why)",
      "2:the command line was wrong"
    },
    subcommands = {
      ServeCommand.class,
      TokenCommand.class,
      AuditCommand.class,
      ConfigCommand.class,
      ProxyCommand.class,
      RunCommand.Run.class,
      RunCommand.Plan.class,
      CommandLine.HelpCommand.class
    })
public final class Main {
  /** Exit code when the operation failed. */
  public static final int FAILED = 1;

  /** Exit code when the command line was wrong. */
  public static final int USAGE = 2;

  public static void main(String[] args) {
    System.exit(commandLine().execute(args));
  }

  /** The command line with the project's error handling: a message, never a stack trace. */
  public static CommandLine commandLine() {
    CommandLine commandLine = new CommandLine(new Main());
    commandLine.setExecutionExceptionHandler(
        (error, cmd, parseResult) -> {
          cmd.getErr().println("agent-sandbox " + cmd.getCommandName() + ": " + error.getMessage());
          return FAILED;
        });
    commandLine.setCaseInsensitiveEnumValuesAllowed(true);
    return commandLine;
  }
}
