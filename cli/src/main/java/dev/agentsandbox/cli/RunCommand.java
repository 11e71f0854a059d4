package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
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

/** {@code agent-sandbox run} and {@code agent-sandbox plan}: one command for one agent. */
final class RunCommand {
  private RunCommand() {}

  /** The agent, its environment and the command, as both subcommands take them. */
  static final class Workload {
    @Option(names = "--agent", required = true, paramLabel = "NAME", description = "The agent")
    String agent;

    @Option(
        names = {"-e", "--env"},
        paramLabel = "KEY=VALUE",
        description = "An environment variable for the workload; repeatable")
    List<String> env = List.of();

    @Option(
        names = {"-l", "--label"},
        paramLabel = "KEY=VALUE",
        description =
            "A label for the run (owner, task reference...), on every object and audit row;"
                + " repeatable")
    List<String> labels = List.of();

    @Parameters(paramLabel = "COMMAND", arity = "1..*", description = "The command, after --")
    List<String> command;

    Map<String, Object> body(CommandSpec spec) {
      Map<String, Object> body = new LinkedHashMap<>();
      body.put("agent", agent);
      body.put("command", command);
      body.put("env", pairs(spec, "--env", env));
      if (!labels.isEmpty()) {
        body.put("labels", pairs(spec, "--label", labels));
      }
      return body;
    }
  }

  static Map<String, String> pairs(CommandSpec spec, String option, List<String> pairs) {
    Map<String, String> map = new LinkedHashMap<>();
    for (String pair : pairs) {
      int eq = pair.indexOf('=');
      if (eq <= 0) {
        throw new ParameterException(
            spec.commandLine(), option + " " + pair + ": expected KEY=VALUE");
      }
      map.put(pair.substring(0, eq), pair.substring(eq + 1));
    }
    return map;
  }

  /** Runs COMMAND and follows it like {@code docker run}. */
  @Command(
      name = "run",
      mixinStandardHelpOptions = true,
      description = {
        "Run a command in a sandbox: its output and refusals as they happen",
        "",
        "The workload's output goes to stdout as it is produced, its stderr to stderr where the"
            + " backend keeps them apart (Docker; microVM and Kubernetes give one stream), each"
            + " egress refusal to stderr as `denied: HOST:PORT"
            + " REASON`, and the command exits with the workload's exit status. Ctrl-C kills the"
            + " run (a second Ctrl-C stops waiting for it); --detach prints the run id and"
            + " returns at once; --json waits and prints the whole result as one JSON document."
      },
      exitCodeListHeading = "%nExit codes:%n",
      exitCodeList = {
        "0-255:the workload's own exit status, when it exited",
        "120:the run ended but --artifacts could not save all its artifacts",
        "121:lost the run: the server went away while following it",
        "122:backend failure: the run failed outside the workload",
        "123:killed (Ctrl-C, runs kill, server shutdown)",
        "124:timed out at the agent's ttl_seconds",
        "125:refused before start (nothing ran), or the server unreachable",
        "2:the command line was wrong"
      },
      footerHeading = "%nExamples:%n",
      footer = {
        "  agent-sandbox run --agent helper -- python job.py",
        "  agent-sandbox run --agent helper -e JOB_ID=42 --detach -- sh -c 'make test'",
        "  agent-sandbox run --agent helper --json -- true | jq .egress",
        "  agent-sandbox run --agent planner --artifacts ./review -- terraform plan -out out/plan"
      })
  static final class Run implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ApiConnection api;
    @Mixin Workload workload;

    @Option(
        names = {"-d", "--detach"},
        description = "Start the run, print its id and return at once")
    boolean detach;

    @Option(
        names = "--json",
        description =
            "Wait for the end and print the result (exit status, output tail, every egress"
                + " decision) as one JSON document")
    boolean json;

    @Option(
        names = "--artifacts",
        paramLabel = "DIR",
        description =
            "When the run has ended, download the files it left in /workspace/out into DIR, each"
                + " checked against its SHA-256 (as artifacts get does)")
    java.nio.file.Path artifacts;

    @Option(
        names = "--input",
        paramLabel = "DIR",
        description =
            "Put DIR's content into /workspace before the command starts (the run becomes a"
                + " session used for one step: docs/api.md)")
    java.nio.file.Path input;

    @Option(
        names = "--input-file",
        paramLabel = "LOCAL=PATH",
        description = "Put the local file LOCAL at PATH inside /workspace first; repeatable")
    List<String> inputFiles = List.of();

    @Override
    public Integer call() throws IOException, InterruptedException {
      if ((input != null || !inputFiles.isEmpty()) && detach) {
        throw new ParameterException(
            spec.commandLine(),
            "--input and --input-file wait for the command to close the session: drop --detach"
                + " (or use session open, cp and exec)");
      }
      if (input != null || !inputFiles.isEmpty()) {
        return new InputRun(spec, api, workload, input, inputFiles, json).run(this::withArtifacts);
      }
      if (detach && json) {
        throw new ParameterException(spec.commandLine(), "--detach and --json exclude each other");
      }
      if (detach && artifacts != null) {
        throw new ParameterException(
            spec.commandLine(),
            "--artifacts waits for the end, --detach does not: use artifacts get RUN_ID later");
      }
      PrintWriter out = spec.commandLine().getOut();
      PrintWriter err = spec.commandLine().getErr();
      Terminal terminal = Terminal.detect(api.env);
      try (AdminApi client = api.open(spec)) {
        if (json) {
          return whole(client, out, err, terminal);
        }

        String runId;
        try {
          JsonNode started =
              client
                  .call(
                      "start a run of " + workload.agent,
                      client
                          .request(AdminApi.RUNS, Duration.ofMinutes(2))
                          .header("Content-Type", "application/json")
                          .POST(AdminApi.json(workload.body(spec)))
                          .build())
                  .json();
          runId = started.path("run_id").asText();
        } catch (ApiCallException | IOException e) {
          err.println("agent-sandbox run: " + e.getMessage());
          err.flush();
          return ExitCodes.REFUSED;
        }
        if (detach) {
          out.println(runId);
          out.flush();
          return 0;
        }
        RunFollower follower = new RunFollower(client, runId, out, err, terminal);
        follower.killOnInterrupt();
        return withArtifacts(client, runId, follower.follow(), err);
      }
    }

    /**
     * Downloads the run's artifacts when {@code --artifacts} was given, writing what it saved on
     * stderr (stdout is the workload's); the run's own code unless something was not saved.
     */
    int withArtifacts(AdminApi client, String runId, int code, PrintWriter err)
        throws IOException, InterruptedException {
      if (artifacts == null || code == ExitCodes.LOST) {
        return code;
      }
      int saved;
      try {
        saved = ArtifactsCommand.save(client, runId, null, artifacts, err, err);
      } catch (IOException | ApiCallException e) {
        err.println("agent-sandbox run: " + e.getMessage());
        saved = Main.FAILED;
      }
      if (saved == 0) {
        return code;
      }
      err.println(
          "agent-sandbox: run "
              + runId
              + " ended with exit code "
              + code
              + ", but its artifacts were not all saved (exit code "
              + ExitCodes.ARTIFACTS_NOT_SAVED
              + ")");
      err.flush();
      return ExitCodes.ARTIFACTS_NOT_SAVED;
    }

    private int whole(AdminApi client, PrintWriter out, PrintWriter err, Terminal terminal)
        throws IOException, InterruptedException {
      AdminApi.Answer answer;
      try {
        answer =
            client.call(
                "run " + workload.agent,
                client
                    .request(AdminApi.BASE + "/run", Duration.ofHours(5))
                    .header("Content-Type", "application/json")
                    .POST(AdminApi.json(workload.body(spec)))
                    .build());
      } catch (ApiCallException e) {
        err.println("agent-sandbox run: " + e.getMessage());
        err.flush();
        return ExitCodes.REFUSED;
      } catch (IOException e) {
        err.println("agent-sandbox run: " + e.getMessage());
        err.flush();
        return ExitCodes.REFUSED;
      }
      out.println(answer.body());
      out.flush();
      JsonNode run = answer.json();
      String runId = run.path("run_id").asText();
      return withArtifacts(client, runId, ExitCodes.of(run, runId, err, terminal), err);
    }
  }

  /** Prints what a run would create, creating nothing. */
  @Command(
      name = "plan",
      mixinStandardHelpOptions = true,
      description = {
        "Show what a run would create, without running anything",
        "",
        "A readable summary by default; -o yaml or -o json for the whole plan with every object's"
            + " manifest exactly as a run would create it."
      },
      footerHeading = "%nExamples:%n",
      footer = {
        "  agent-sandbox plan --agent helper -- python job.py",
        "  agent-sandbox plan -o yaml --agent helper -- python job.py > plan.yaml"
      })
  static final class Plan implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ApiConnection api;
    @Mixin Workload workload;

    @Option(
        names = {"-o", "--output"},
        paramLabel = "FORMAT",
        description = "summary (default), yaml or json")
    String format = "summary";

    @Override
    public Integer call() throws IOException, InterruptedException {
      if (!List.of("summary", "yaml", "json").contains(format)) {
        throw new ParameterException(
            spec.commandLine(), "-o " + format + ": expected summary, yaml or json");
      }
      PrintWriter out = spec.commandLine().getOut();
      try (AdminApi client = api.open(spec)) {
        JsonNode plan =
            client
                .call(
                    "plan a run of " + workload.agent,
                    client
                        .request(AdminApi.BASE + "/plan", Duration.ofMinutes(2))
                        .header("Content-Type", "application/json")
                        .POST(AdminApi.json(workload.body(spec)))
                        .build())
                .json();
        switch (format) {
          case "yaml" -> out.print(Printer.yaml(plan));
          case "json" -> out.println(Printer.json(plan));
          default -> summary(out, plan, Terminal.detect(api.env));
        }
        out.flush();
        return 0;
      }
    }

    static void summary(PrintWriter out, JsonNode plan, Terminal terminal) {
      List<String[]> lines = new ArrayList<>();
      lines.add(
          new String[] {
            "Agent",
            plan.path("agent").asText()
                + (plan.path("agent_configured").asBoolean()
                    ? ""
                    : " (not configured: the defaults it would get)")
          });
      lines.add(
          new String[] {
            "Sandboxes",
            plan.path("enabled").asBoolean()
                ? "enabled"
                : terminal.yellow("disabled (a run would be refused: config edit, enabled: true)")
          });
      lines.add(
          new String[] {
            "Backend",
            plan.path("backend").asText()
                + ", runtime "
                + plan.path("runtime").asText()
                + ", isolation "
                + plan.path("isolation").asText()
                + (plan.path("available").asBoolean(true)
                    ? ""
                    : terminal.red(" (unavailable here: " + plan.path("probe").asText() + ")"))
          });
      if (!plan.path("probes_running").isEmpty()) {
        // auto chose among the backends that had answered: say which were still being probed.
        lines.add(
            new String[] {
              "Still probing",
              terminal.yellow(
                  join(plan.path("probes_running"), ", ")
                      + " (not yet considered by auto; plan again in a moment)")
            });
      }
      lines.add(new String[] {"Image", plan.path("image").asText()});
      lines.add(new String[] {"Command", join(plan.path("command"), " ")});
      lines.add(
          new String[] {
            "Egress",
            plan.path("effective_allow").isEmpty()
                ? "nothing (every connection is refused)"
                : join(plan.path("effective_allow"), ", ")
          });
      lines.add(
          new String[] {
            "Instance rule",
            plan.path("instance_allow").isTextual()
                ? plan.path("instance_allow").asText()
                : join(plan.path("instance_allow"), ", ")
          });
      JsonNode resources = plan.path("resources");
      lines.add(
          new String[] {
            "Limits",
            resources.path("cpus").asText()
                + " CPU, "
                + resources.path("memory_mb").asText()
                + " MiB, "
                + resources.path("pids").asText()
                + " processes, ttl "
                + Printer.age(Duration.ofSeconds(plan.path("ttl_seconds").asLong()))
          });
      List<String> objects = new ArrayList<>();
      plan.path("manifests")
          .forEach(m -> objects.add(m.path("kind").asText() + " " + m.path("name").asText()));
      lines.add(new String[] {"Creates", objects.isEmpty() ? "-" : objects.getFirst()});
      for (int i = 1; i < objects.size(); i++) {
        lines.add(new String[] {"", objects.get(i)});
      }
      int width = lines.stream().mapToInt(l -> l[0].length()).max().orElse(0);
      for (String[] line : lines) {
        out.println(terminal.bold(line[0]) + " ".repeat(width - line[0].length() + 2) + line[1]);
      }
      out.println(terminal.dim("(-o yaml shows every object's manifest)"));
    }

    private static String join(JsonNode array, String separator) {
      List<String> parts = new ArrayList<>();
      array.forEach(v -> parts.add(v.asText()));
      return String.join(separator, parts);
    }
  }
}
