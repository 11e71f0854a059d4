package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
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
 * {@code agent-sandbox runs list|get|logs|kill|timeline}: runs as a resource, like {@code kubectl
 * get}.
 */
@Command(
    name = "runs",
    mixinStandardHelpOptions = true,
    description = "List, inspect, follow and kill runs; read a run's timeline",
    footerHeading = "%nExamples:%n",
    footer = {"  agent-sandbox runs list --status running", "  agent-sandbox runs logs -f RUN_ID"},
    subcommands = {
      RunsCommand.ListRuns.class,
      RunsCommand.Get.class,
      RunsCommand.Logs.class,
      RunsCommand.Kill.class,
      RunsCommand.Timeline.class
    })
final class RunsCommand implements Runnable {
  static final List<String> HEADERS =
      List.of("RUN ID", "AGENT", "STATUS", "EXIT", "BACKEND", "AGE", "DURATION");

  @Spec CommandSpec spec;

  @Override
  public void run() {
    throw new ParameterException(
        spec.commandLine(), "name a subcommand: list, get, logs, kill or timeline");
  }

  /** One table row of a run, from either the list's items or a full run. */
  static List<String> row(JsonNode run, Instant now) {
    String exit = run.path("exit_status").isInt() ? run.path("exit_status").asText() : "-";
    return List.of(
        run.path("run_id").asText(),
        run.path("agent").asText(),
        run.path("status").asText(),
        exit,
        Printer.text(run.path("backend")),
        Printer.between(run.path("created_at"), null, now),
        Printer.between(
            run.path("started_at").isTextual() ? run.path("started_at") : run.path("created_at"),
            run.path("ended_at"),
            now));
  }

  @Command(
      name = "list",
      aliases = "ls",
      mixinStandardHelpOptions = true,
      description = "List the newest runs, newest first.",
      footerHeading = "%nExamples:%n",
      footer = {
        "  agent-sandbox runs list",
        "  agent-sandbox runs list --agent helper --status killed --since 2h -o json",
        "  agent-sandbox runs list --label owner=alice --label task-ref=JIRA-1042",
        "  agent-sandbox runs list --status running --no-headers | cut -d' ' -f1"
      })
  static final class ListRuns implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ApiConnection api;
    @Mixin Printer printer;

    @Option(names = "--agent", paramLabel = "NAME", description = "Only this agent's runs")
    String agent;

    @Option(
        names = "--status",
        paramLabel = "STATUS",
        description =
            "Only runs in this status: pending, running, exited, deadline, killed, failed, closed")
    String status;

    @Option(
        names = "--since",
        paramLabel = "WHEN",
        description =
            "Only runs created since an instant (2026-11-29T12:00:00Z) or an age (30s,"
                + " 15m, 2h, 7d)")
    String since;

    @Option(
        names = {"-l", "--label"},
        paramLabel = "KEY=VALUE",
        description = "Only runs carrying this label; repeatable (runs carrying every one)")
    List<String> labels = List.of();

    @Option(
        names = "--limit",
        paramLabel = "N",
        description = "At most N runs, 1 to 500 (default 50)")
    Integer limit;

    @Override
    public Integer call() throws IOException, InterruptedException {
      Map<String, String> query = new LinkedHashMap<>();
      query.put("agent", agent);
      query.put("status", status);
      query.put("since", since);
      if (!labels.isEmpty()) {
        List<String> pairs = new ArrayList<>();
        RunCommand.pairs(spec, "--label", labels).forEach((k, v) -> pairs.add(k + "=" + v));
        query.put("label", String.join(",", pairs));
      }
      query.put("limit", limit == null ? null : limit.toString());
      try (AdminApi client = api.open(spec)) {
        JsonNode answer = client.get("list runs", AdminApi.path(AdminApi.RUNS, query));
        PrintWriter out = spec.commandLine().getOut();
        if (printer.document(out, answer)) {
          return 0;
        }
        Instant now = Instant.now();
        List<List<String>> rows = new ArrayList<>();
        answer.path("runs").forEach(run -> rows.add(row(run, now)));
        printer.table(out, HEADERS, rows);
        return 0;
      }
    }
  }

  @Command(
      name = "get",
      mixinStandardHelpOptions = true,
      description = "Show one run: a table row, or the whole result with -o json|yaml.",
      footerHeading = "%nExamples:%n",
      footer = {"  agent-sandbox runs get RUN_ID", "  agent-sandbox runs get RUN_ID -o yaml"})
  static final class Get implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ApiConnection api;
    @Mixin Printer printer;

    @Parameters(paramLabel = "RUN_ID", description = "The run")
    String runId;

    @Override
    public Integer call() throws IOException, InterruptedException {
      try (AdminApi client = api.open(spec)) {
        JsonNode run = client.get("read run " + runId, AdminApi.RUNS + "/" + runId);
        PrintWriter out = spec.commandLine().getOut();
        if (!printer.document(out, run)) {
          printer.table(out, HEADERS, List.of(row(run, Instant.now())));
        }
        return 0;
      }
    }
  }

  @Command(
      name = "logs",
      mixinStandardHelpOptions = true,
      description = {
        "Print a run's redacted output; -f follows it until the run ends.",
        "",
        "Without -f: the retained tail (the last 64 KiB), standard output and error together."
            + " With -f: the retained lines, then new ones as the workload writes them, its"
            + " standard error on stderr where the backend keeps it apart (Docker)."
      },
      footerHeading = "%nExamples:%n",
      footer = {"  agent-sandbox runs logs RUN_ID", "  agent-sandbox runs logs -f RUN_ID"})
  static final class Logs implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ApiConnection api;

    @Parameters(paramLabel = "RUN_ID", description = "The run")
    String runId;

    @Option(
        names = {"-f", "--follow"},
        description = "Keep printing new output until the run ends")
    boolean follow;

    @Override
    public Integer call() throws IOException, InterruptedException {
      PrintWriter out = spec.commandLine().getOut();
      Terminal terminal = Terminal.detect(api.env);
      try (AdminApi client = api.open(spec)) {
        if (!follow) {
          JsonNode run = client.get("read run " + runId, AdminApi.RUNS + "/" + runId);
          String tail = run.path("output_tail").asText("");
          if (terminal.stdoutTerminal()) {
            TerminalText.Escaper escaper = new TerminalText.Escaper();
            tail = escaper.feed(tail) + escaper.finish();
          }
          out.print(tail);
          out.flush();
          return 0;
        }
        RunFollower.copyOutput(
            client.output("follow the output of run " + runId, runId),
            out,
            spec.commandLine().getErr(),
            terminal);
        return 0;
      }
    }
  }

  @Command(
      name = "kill",
      mixinStandardHelpOptions = true,
      description = "Kill a live run; the audit log records who asked.",
      footerHeading = "%nExamples:%n",
      footer = {"  agent-sandbox runs kill RUN_ID"})
  static final class Kill implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ApiConnection api;
    @Mixin Printer printer;

    @Parameters(paramLabel = "RUN_ID", description = "The run")
    String runId;

    @Override
    public Integer call() throws IOException, InterruptedException {
      try (AdminApi client = api.open(spec)) {
        JsonNode answer =
            client
                .call(
                    "kill run " + runId,
                    client
                        .request(AdminApi.RUNS + "/" + runId, Duration.ofSeconds(30))
                        .DELETE()
                        .build())
                .json();
        PrintWriter out = spec.commandLine().getOut();
        if (!printer.document(out, answer)) {
          printer.table(
              out,
              List.of("RUN ID", "STATUS"),
              List.of(List.of(answer.path("run_id").asText(), answer.path("status").asText())));
        }
        return 0;
      }
    }
  }

  @Command(
      name = "timeline",
      mixinStandardHelpOptions = true,
      description = {
        "Show a run's timeline: who launched it, what ran, what was allowed and denied, how it"
            + " ended.",
        "",
        "Every audit row of the run in order (time, audit row id, kind, summary) and whether the"
            + " audit chain verifies up to the newest of them. -o json|yaml prints the API's"
            + " whole answer. Exits 1 when the chain does not verify."
      },
      footerHeading = "%nExamples:%n",
      footer = {
        "  agent-sandbox runs timeline RUN_ID",
        "  agent-sandbox runs timeline RUN_ID -o json | jq .egress.denied"
      })
  static final class Timeline implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ApiConnection api;
    @Mixin Printer printer;

    @Parameters(paramLabel = "RUN_ID", description = "The run")
    String runId;

    @Override
    public Integer call() throws IOException, InterruptedException {
      try (AdminApi client = api.open(spec)) {
        return TimelineView.print(
            client, runId, printer, spec.commandLine().getOut(), Terminal.detect(api.env));
      }
    }
  }
}
