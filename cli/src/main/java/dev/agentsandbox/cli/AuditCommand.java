package dev.agentsandbox.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import dev.agentsandbox.policy.event.EventType;
import dev.agentsandbox.store.AuditHead;
import dev.agentsandbox.store.AuditLog;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.AuditRow;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.store.VerifyResult;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code agent-sandbox audit tail|query|verify|export}: the audit log, straight on the store; and
 * {@code audit run}, one run's audit trail through the API.
 */
@Command(
    name = "audit",
    footerHeading = "%nExamples:%n",
    footer = {"  agent-sandbox audit tail -n 20", "  agent-sandbox audit run RUN_ID"},
    mixinStandardHelpOptions = true,
    description = "Read, export and verify the hash-chained audit log",
    subcommands = {
      AuditCommand.Tail.class,
      AuditCommand.Query.class,
      AuditCommand.Verify.class,
      AuditCommand.Export.class,
      AuditCommand.RunTrail.class
    })
final class AuditCommand implements Runnable {
  @Spec CommandSpec spec;

  @Override
  public void run() {
    throw new ParameterException(
        spec.commandLine(), "name a subcommand: tail, query, verify, export or run");
  }

  /** Filters shared by query and export. */
  static final class Filters {
    @Option(
        names = "--type",
        paramLabel = "PREFIX",
        description = "Type prefix, such as agent_sandbox.config")
    String type;

    @Option(names = "--agent", description = "Agent name")
    String agent;

    @Option(names = "--run", paramLabel = "RUN_ID", description = "Run id")
    String run;

    @Option(
        names = "--since",
        paramLabel = "WHEN",
        description = "An instant (2026-01-31T12:00:00Z) or an age (15m, 2h, 7d)")
    String since;

    @Option(names = "--after-id", paramLabel = "ID", description = "Only rows after this id")
    Long afterId;

    private static final Pattern AGE = Pattern.compile("([0-9]{1,6})([smhd])");

    AuditQuery query(CommandSpec spec, int limit) {
      return new AuditQuery(type, agent, run, sinceInstant(spec), afterId, limit);
    }

    private Instant sinceInstant(CommandSpec spec) {
      if (since == null) {
        return null;
      }
      Matcher age = AGE.matcher(since);
      if (age.matches()) {
        long amount = Long.parseLong(age.group(1));
        Duration duration =
            switch (age.group(2)) {
              case "s" -> Duration.ofSeconds(amount);
              case "m" -> Duration.ofMinutes(amount);
              case "h" -> Duration.ofHours(amount);
              default -> Duration.ofDays(amount);
            };
        return Instant.now().minus(duration);
      }
      try {
        return Instant.parse(since);
      } catch (DateTimeParseException e) {
        throw new ParameterException(
            spec.commandLine(),
            "--since '"
                + since
                + "' is neither an instant (2026-01-31T12:00:00Z) nor an age (15m, 2h, 7d)");
      }
    }
  }

  static void printRows(PrintWriter out, List<AuditRow> rows) {
    for (AuditRow row : rows) {
      try {
        out.println(Printer.JSON_LINE.writeValueAsString(AuditLog.toJson(row)));
      } catch (JsonProcessingException e) {
        throw new IllegalStateException("a tree always serializes", e);
      }
    }
    out.flush();
  }

  @Command(
      name = "tail",
      footerHeading = "%nExamples:%n",
      footer = {"  agent-sandbox audit tail -n 20", "  agent-sandbox audit run RUN_ID"},
      mixinStandardHelpOptions = true,
      description = "Prints the newest rows as JSON lines; with --follow, keeps printing new ones.")
  static final class Tail implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(
        names = {"-n", "--lines"},
        defaultValue = "20",
        description = "How many rows (default ${DEFAULT-VALUE}, at most 1000)")
    int lines;

    @Option(
        names = {"-f", "--follow"},
        description = "Keep printing rows as they are appended (Ctrl-C stops)")
    boolean follow;

    @Mixin StoreOptions store;

    @Override
    public Integer call() throws InterruptedException {
      if (lines < 1 || lines > AuditQuery.MAX_LIMIT) {
        throw new ParameterException(
            spec.commandLine(), "--lines must be from 1 to " + AuditQuery.MAX_LIMIT);
      }
      PrintWriter out = spec.commandLine().getOut();
      try (Store opened = store.open()) {
        List<AuditRow> rows = opened.audit().query(AuditQuery.all(lines));
        printRows(out, rows);
        long last = rows.isEmpty() ? 0 : rows.get(rows.size() - 1).id();
        while (follow) {
          Thread.sleep(1000);
          List<AuditRow> more =
              opened
                  .audit()
                  .query(new AuditQuery(null, null, null, null, last, AuditQuery.MAX_LIMIT));
          printRows(out, more);
          if (!more.isEmpty()) {
            last = more.get(more.size() - 1).id();
          }
        }
      }
      return 0;
    }
  }

  @Command(
      name = "query",
      footerHeading = "%nExamples:%n",
      footer = {"  agent-sandbox audit query --type " + EventType.EGRESS + " --since 1h"},
      mixinStandardHelpOptions = true,
      description = "Prints matching rows as JSON lines, oldest first.")
  static final class Query implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Filters filters;

    @Option(
        names = "--limit",
        defaultValue = "100",
        description = "At most this many rows (default ${DEFAULT-VALUE}, at most 1000)")
    int limit;

    @Mixin StoreOptions store;

    @Override
    public Integer call() {
      if (limit < 1 || limit > AuditQuery.MAX_LIMIT) {
        throw new ParameterException(
            spec.commandLine(), "--limit must be from 1 to " + AuditQuery.MAX_LIMIT);
      }
      try (Store opened = store.open()) {
        printRows(spec.commandLine().getOut(), opened.audit().query(filters.query(spec, limit)));
      }
      return 0;
    }
  }

  @Command(
      name = "verify",
      footerHeading = "%nExamples:%n",
      footer = {"  agent-sandbox audit verify --head 120:HASH"},
      mixinStandardHelpOptions = true,
      description = {
        "Checks every row's hash and the links between rows; exits 1 naming each edited,"
            + " deleted or reordered row.",
        "Prints the chain head (id:hash); keep it elsewhere and pass it back with --head to also"
            + " detect deletion of the newest rows."
      })
  static final class Verify implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(names = "--head", paramLabel = "ID:HASH", description = "A chain head recorded earlier")
    String head;

    @Mixin StoreOptions store;

    @Override
    public Integer call() {
      AuditHead anchor;
      try {
        anchor = head == null ? null : AuditHead.parse(head);
      } catch (IllegalArgumentException e) {
        throw new ParameterException(spec.commandLine(), e.getMessage());
      }
      try (Store opened = store.open()) {
        VerifyResult result =
            anchor == null ? opened.audit().verify() : opened.audit().verify(anchor);
        if (result.ok()) {
          PrintWriter out = spec.commandLine().getOut();
          out.println(
              "ok: " + result.rowsChecked() + " rows checked; head " + opened.audit().head());
          out.flush();
          return 0;
        }
        PrintWriter err = spec.commandLine().getErr();
        err.println(
            "audit verify: FAILED after checking "
                + result.rowsChecked()
                + " rows; "
                + result.problems().size()
                + " problem(s):");
        result.problems().forEach(problem -> err.println("  " + problem));
        err.flush();
        return Main.FAILED;
      }
    }
  }

  @Command(
      name = "export",
      footerHeading = "%nExamples:%n",
      footer = {"  agent-sandbox audit export --since 7d -o audit.jsonl"},
      mixinStandardHelpOptions = true,
      description =
          "Writes matching rows as JSON lines (one row per line) for a SIEM, oldest first.")
  static final class Export implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Filters filters;

    @Option(
        names = {"-o", "--out"},
        paramLabel = "FILE",
        description = "Write here instead of stdout")
    Path file;

    @Mixin StoreOptions store;

    @Override
    public Integer call() throws IOException {
      AuditQuery query = filters.query(spec, Integer.MAX_VALUE);
      try (Store opened = store.open()) {
        if (file == null) {
          Writer out = spec.commandLine().getOut();
          opened.audit().export(query, out);
          out.flush();
        } else {
          try (Writer out = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            opened.audit().export(query, out);
          }
        }
      }
      return 0;
    }
  }

  @Command(
      name = "run",
      mixinStandardHelpOptions = true,
      description = {
        "Show one run's audit trail: who launched it, what ran, what was allowed and denied, how"
            + " it ended",
        "",
        "The same view as runs timeline, read through the API (GET .../runs/{id}/timeline), with"
            + " each audit row's id and whether the chain verifies up to the newest of them."
            + " Exits 1 when it does not."
      },
      footerHeading = "%nExamples:%n",
      footer = {
        "  agent-sandbox audit run RUN_ID",
        "  agent-sandbox audit run RUN_ID -o json > evidence.json"
      })
  static final class RunTrail implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ApiConnection api;
    @Mixin Printer printer;

    @picocli.CommandLine.Parameters(paramLabel = "RUN_ID", description = "The run")
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
