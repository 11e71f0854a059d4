package dev.agentsandbox.cli;

import dev.agentsandbox.proxy.ProxyCommand;
import java.util.Arrays;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code agent-sandbox} command. Exit codes: 0 success, 1 the operation failed (store
 * unreachable, audit chain broken, API refusal...), 2 the command line was wrong; {@code run} adds
 * the workload's own status and 121 to 125 ({@link ExitCodes}).
 */
@Command(
    name = "agent-sandbox",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description =
        "Runs AI agents' workloads in per-run sandboxes fenced by a default-deny egress proxy.",
    synopsisSubcommandLabel = "COMMAND",
    commandListHeading = "%nCommands:%n",
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "0:success",
      "1:the operation failed (the message says why)",
      "2:the command line was wrong",
      "3:drill only: a layer did not hold (drill --help)",
      "120-125:run only: artifacts not saved, lost, backend failure, killed, timed out, refused"
          + " (run --help)"
    },
    footerHeading = "%nExamples:%n",
    footer = {
      "  agent-sandbox login --url http://127.0.0.1:8080 --token-file data/admin-token",
      "  agent-sandbox run --agent helper -- python job.py",
      "  agent-sandbox runs list",
      "Run agent-sandbox COMMAND --help for a command's options; docs/cli.md has them all."
    },
    subcommands = {
      RunCommand.Run.class,
      RunsCommand.class,
      SessionCommand.class,
      ArtifactsCommand.class,
      RunCommand.Plan.class,
      ConfigCommand.class,
      LoginCommand.class,
      McpCommand.class,
      ServeCommand.class,
      TokenCommand.class,
      AuditCommand.class,
      DrillCommand.class,
      ProxyCommand.class,
      CompletionCommand.class,
      CommandLine.HelpCommand.class
    })
public final class Main {
  /** Exit code when the operation failed. */
  public static final int FAILED = 1;

  /** Exit code when the command line was wrong. */
  public static final int USAGE = 2;

  public static void main(String[] args) {
    if (args.length > 0 && args[0].equals("serve")) {
      System.exit(serveCommandLine().execute(Arrays.copyOfRange(args, 1, args.length)));
    }
    System.exit(commandLine().execute(args));
  }

  /**
   * {@code serve} alone, for the control plane's start: picocli builds the model of every
   * subcommand by reflection before it parses (its class files are too old for the JDK's class
   * caches to hold), and a control plane need not pay for the twelve it does not run. The same
   * command, options, help and error handling as {@code agent-sandbox serve} in {@link
   * #commandLine()} (CommandLineTest compares them).
   */
  static CommandLine serveCommandLine() {
    CommandLine serve = new CommandLine(new ServeCommand());
    serve.setCommandName("agent-sandbox serve");
    return withErrorHandling(serve, "");
  }

  /** The command line with the project's error handling: a message, never a stack trace. */
  public static CommandLine commandLine() {
    CommandLine commandLine = withErrorHandling(new CommandLine(new Main()), "agent-sandbox ");
    // The proxy's command lives in its own module; its example is given here.
    commandLine
        .getSubcommands()
        .get("proxy")
        .getCommandSpec()
        .usageMessage()
        .description(
            "Run a sandbox's egress proxy by hand (serve starts one per run)",
            "",
            "The default-deny egress proxy (HTTP CONNECT and plain HTTP); docs/proxy.md.")
        .footerHeading("%nExamples:%n")
        .footer(
            "  agent-sandbox proxy --listen 0.0.0.0:3128 --allow api.vendor.com --run-id r1",
            "(serve starts one per run; this is for testing the proxy by hand)");
    return commandLine;
  }

  private static CommandLine withErrorHandling(CommandLine commandLine, String prefix) {
    commandLine.setExecutionExceptionHandler(
        (error, cmd, parseResult) -> {
          // A message may quote what the server or another user sent: it must not drive the
          // terminal it is printed on.
          TerminalText.Escaper escaper = new TerminalText.Escaper();
          String message = escaper.feed(String.valueOf(error.getMessage())) + escaper.finish();
          cmd.getErr().println(prefix + cmd.getCommandName() + ": " + message);
          cmd.getErr().flush();
          return FAILED;
        });
    commandLine.setCaseInsensitiveEnumValuesAllowed(true);
    return commandLine;
  }
}
