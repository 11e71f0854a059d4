package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code agent-sandbox session}: a sandbox an agent works in step by step (docs/cli.md), with the
 * habits of {@code docker} and {@code kubectl}: {@code open}, {@code exec}, {@code cp}, {@code
 * close}, {@code steps}.
 */
@Command(
    name = "session",
    mixinStandardHelpOptions = true,
    description = {
      "Work in a sandbox step by step: open, exec, cp in and out, close",
      "",
      "A session is a run whose commands come later: it keeps its sandbox, proxy, policy,"
          + " credentials and audit rows between steps, ends when closed, after idle_seconds"
          + " without a step or a file operation, or at the agent's deadline, and its /workspace/out"
          + " is collected as its artifacts."
    },
    subcommands = {
      SessionCommand.Open.class,
      SessionExec.class,
      SessionCopy.class,
      SessionCommand.Close.class,
      SessionCommand.Steps.class
    },
    footerHeading = "%nExamples:%n",
    footer = {
      "  agent-sandbox session open --agent helper   (prints its id: $id below)",
      "  agent-sandbox session cp ./project $id:app",
      "  agent-sandbox session exec --cwd app $id -- pytest -q",
      "  agent-sandbox session cp $id:app/report.xml .",
      "  agent-sandbox session close $id"
    })
final class SessionCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Override
  public Integer call() {
    throw new ParameterException(
        spec.commandLine(), "name a subcommand: open, exec, cp, close or steps");
  }

  /** {@code session open}: prints the session's id once it is ready for a step. */
  @Command(
      name = "open",
      mixinStandardHelpOptions = true,
      description = {
        "Open a session and print its id once it is ready for a step",
        "",
        "Taken from the agent's warm pool when it has one. -o json prints the whole session."
      },
      exitCodeListHeading = "%nExit codes:%n",
      exitCodeList = {
        "0:opened",
        "1:refused or failed (the message says why)",
        "2:the command line was wrong"
      },
      footerHeading = "%nExamples:%n",
      footer = {
        "  agent-sandbox session open --agent helper",
        "  agent-sandbox session open --agent helper --idle 900 -l ticket=OPS-7 -o json"
      })
  static final class Open implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ApiConnection api;

    @Option(names = "--agent", required = true, paramLabel = "NAME", description = "The agent")
    String agent;

    @Option(
        names = {"-e", "--env"},
        paramLabel = "KEY=VALUE",
        description = "An environment variable every step gets; repeatable")
    List<String> env = List.of();

    @Option(
        names = {"-l", "--label"},
        paramLabel = "KEY=VALUE",
        description = "A label for the session, on every object and audit row; repeatable")
    List<String> labels = List.of();

    @Option(
        names = "--idle",
        paramLabel = "SECONDS",
        description = "End it after this long without a step or a file operation (default 300)")
    Integer idle;

    @Option(
        names = {"-o", "--output"},
        paramLabel = "FORMAT",
        description = "id (default) or json")
    String format = "id";

    @Override
    public Integer call() throws IOException, InterruptedException {
      if (!List.of("id", "json").contains(format)) {
        throw new ParameterException(spec.commandLine(), "-o " + format + ": expected id or json");
      }
      PrintWriter out = spec.commandLine().getOut();
      try (AdminApi client = api.open(spec)) {
        JsonNode session =
            new SessionClient(client, Terminal.detect(api.env))
                .open(body(spec, agent, env, labels, idle));
        out.println(
            format.equals("json") ? Printer.json(session) : session.path("run_id").asText());
        out.flush();
        return 0;
      }
    }
  }

  /** The body of {@code POST .../sessions}. */
  static Map<String, Object> body(
      CommandSpec spec, String agent, List<String> env, List<String> labels, Integer idle) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("agent", agent);
    body.put("env", RunCommand.pairs(spec, "--env", env));
    if (!labels.isEmpty()) {
      body.put("labels", RunCommand.pairs(spec, "--label", labels));
    }
    if (idle != null) {
      body.put("idle_seconds", idle);
    }
    return body;
  }

  /** {@code session close}: its outputs collected, its sandbox removed. */
  @Command(
      name = "close",
      mixinStandardHelpOptions = true,
      description = {
        "Close a session: running steps end, /workspace/out is collected, the sandbox is removed",
        "",
        "Prints how it ended; -o json the whole result."
      },
      footerHeading = "%nExamples:%n",
      footer = {"  agent-sandbox session close $id", "  agent-sandbox session close -o json $id"})
  static final class Close implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ApiConnection api;

    @Parameters(index = "0", paramLabel = "ID", description = "The session's run id")
    String id;

    @Option(
        names = {"-o", "--output"},
        paramLabel = "FORMAT",
        description = "summary (default) or json")
    String format = "summary";

    @Override
    public Integer call() throws IOException, InterruptedException {
      PrintWriter out = spec.commandLine().getOut();
      try (AdminApi client = api.open(spec)) {
        JsonNode closed = new SessionClient(client, Terminal.detect(api.env)).close(id);
        if (format.equals("json")) {
          out.println(Printer.json(closed));
        } else {
          out.println(
              "session "
                  + id
                  + " "
                  + closed.path("status").asText()
                  + " ("
                  + closed.path("end").asText()
                  + ") after "
                  + closed.path("steps").asInt()
                  + " steps");
        }
        out.flush();
        return 0;
      }
    }
  }

  /** {@code session steps}: one line per step, in order. */
  @Command(
      name = "steps",
      mixinStandardHelpOptions = true,
      description = {
        "List a session's steps in order: status, end, exit status, duration, command"
      },
      footerHeading = "%nExamples:%n",
      footer = {"  agent-sandbox session steps $id", "  agent-sandbox session steps -o json $id"})
  static final class Steps implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ApiConnection api;

    @Parameters(index = "0", paramLabel = "ID", description = "The session's run id")
    String id;

    @Option(
        names = {"-o", "--output"},
        paramLabel = "FORMAT",
        description = "table (default) or json")
    String format = "table";

    @Override
    public Integer call() throws IOException, InterruptedException {
      PrintWriter out = spec.commandLine().getOut();
      try (AdminApi client = api.open(spec)) {
        JsonNode steps = new SessionClient(client, Terminal.detect(api.env)).steps(id);
        if (format.equals("json")) {
          out.println(Printer.json(steps));
          out.flush();
          return 0;
        }
        out.printf(
            "%-5s %-8s %-14s %-5s %-9s %s%n",
            "STEP", "STATUS", "END", "EXIT", "DURATION", "COMMAND");
        for (JsonNode step : steps.path("steps")) {
          List<String> command = new java.util.ArrayList<>();
          step.path("command").forEach(arg -> command.add(arg.asText()));
          out.printf(
              "%-5s %-8s %-14s %-5s %-9s %s%n",
              step.path("step").asText(),
              step.path("status").asText(),
              step.path("end").isNull() ? "-" : step.path("end").asText(),
              step.path("exit_status").isNull() ? "-" : step.path("exit_status").asText(),
              step.path("duration_ms").isNull() ? "-" : duration(step.path("duration_ms").asLong()),
              String.join(" ", command));
        }
        out.flush();
        return 0;
      }
    }

    /** A step's duration: milliseconds under a second, else as kubectl writes an age. */
    static String duration(long millis) {
      return millis < 1000 ? millis + "ms" : Printer.age(Duration.ofMillis(millis));
    }
  }
}
