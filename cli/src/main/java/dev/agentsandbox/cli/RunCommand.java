package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.http.HttpRequest;
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

/** {@code agent-sandbox run} and {@code agent-sandbox plan}: one command for one agent. */
final class RunCommand {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String BASE = "/api/admin/platform/agent-sandbox";

  private RunCommand() {}

  /** The agent, its environment and the command, as both subcommands take them. */
  static final class Workload {
    @Option(names = "--agent", required = true, paramLabel = "NAME", description = "The agent")
    String agent;

    @Option(
        names = "--env",
        paramLabel = "KEY=VALUE",
        description = "An environment variable for the workload; repeatable")
    List<String> env = List.of();

    @Parameters(paramLabel = "COMMAND", arity = "1..*", description = "The command, after --")
    List<String> command;

    byte[] body(CommandSpec spec) throws IOException {
      Map<String, String> vars = new LinkedHashMap<>();
      for (String pair : env) {
        int eq = pair.indexOf('=');
        if (eq <= 0) {
          throw new ParameterException(
              spec.commandLine(), "--env " + pair + ": expected KEY=VALUE");
        }
        vars.put(pair.substring(0, eq), pair.substring(eq + 1));
      }
      Map<String, Object> body = new LinkedHashMap<>();
      body.put("agent", agent);
      body.put("command", command);
      body.put("env", vars);
      return JSON.writeValueAsBytes(body);
    }
  }

  /** Runs and prints the result (exit status, output tail, every egress decision) as JSON. */
  @Command(
      name = "run",
      mixinStandardHelpOptions = true,
      description = {
        "Runs COMMAND in a sandbox for the agent and prints the result as JSON:",
        "exit status, why it ended, the output's redacted tail and every egress decision.",
        "Example: agent-sandbox run --agent helper -- python job.py"
      })
  static final class Run implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ApiConnection api;
    @Mixin Workload workload;

    @Override
    public Integer call() throws IOException, InterruptedException {
      HttpRequest request =
          api.request(spec, BASE + "/run", Duration.ofHours(5))
              .header("Content-Type", "application/json")
              .POST(HttpRequest.BodyPublishers.ofByteArray(workload.body(spec)))
              .build();
      return ApiConnection.send(spec, request);
    }
  }

  /** Prints what a run would create, creating nothing. */
  @Command(
      name = "plan",
      mixinStandardHelpOptions = true,
      description = {
        "Prints the backend, runtime, effective allow-list and every object a run of COMMAND",
        "would create, without creating anything. Example: agent-sandbox plan --yaml --agent"
            + " helper -- python job.py"
      })
  static final class Plan implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ApiConnection api;
    @Mixin Workload workload;

    @Option(names = "--yaml", description = "YAML instead of JSON")
    boolean yaml;

    @Override
    public Integer call() throws IOException, InterruptedException {
      HttpRequest request =
          api.request(spec, BASE + "/plan", Duration.ofMinutes(2))
              .header("Content-Type", "application/json")
              .header("Accept", yaml ? "application/yaml" : "application/json")
              .POST(HttpRequest.BodyPublishers.ofByteArray(workload.body(spec)))
              .build();
      return ApiConnection.send(spec, request);
    }
  }
}
