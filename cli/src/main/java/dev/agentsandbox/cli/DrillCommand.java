package dev.agentsandbox.cli;

import dev.agentsandbox.cli.drill.Drill;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code agent-sandbox drill}: the playbook's hostile task, run through the admin API against real
 * sandboxes, each layer's refusal checked, the evidence written as {@code drill.json} and {@code
 * drill.md}; {@code drill verify FILE} checks a transcript against the audit log. The options and
 * their help are here; the drill itself is {@link Drill} and its package.
 */
@Command(
    name = "drill",
    mixinStandardHelpOptions = true,
    description = {
      "Run the hostile-task drill and file its evidence",
      "",
      "Runs, as the agent named by --agent, one sandbox per hostile step (reach an unlisted host,"
          + " bypass or re-point the proxy, the metadata address, the host and the gateway, DNS,"
          + " the host's secrets, privilege escalation, a fork bomb, memory exhaustion, running"
          + " forever) and checks each layer's refusal: the command's output, the proxy's"
          + " decisions, the audit rows, the deadline kill, the teardown. Writes drill.json and"
          + " drill.md to --out. The agent should allow nothing the drill attacks and have a short"
          + " ttl_seconds (at most "
          + Drill.MAX_TTL_SECONDS
          + "): the run-forever step waits for it. docs/runs.md describes every step."
    },
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "0:every layer held (verify: the transcript matches the audit log and says so)",
      "1:the drill could not be carried out (verify: the transcript does not match the log)",
      "2:the command line was wrong",
      "3:at least one layer did not hold (the evidence says which)"
    },
    footerHeading = "%nExamples:%n",
    footer = {
      "  agent-sandbox drill --agent drill --backend docker --out evidence/2026-11-30",
      "  agent-sandbox drill verify evidence/2026-11-30/drill.json"
    },
    subcommands = {DrillCommand.Verify.class})
final class DrillCommand implements Callable<Integer> {
  static final String DEFAULT_UNLISTED = Drill.DEFAULT_UNLISTED;
  static final String DEFAULT_OUTSIDE = Drill.DEFAULT_OUTSIDE;
  static final String DEFAULT_METADATA = Drill.DEFAULT_METADATA;

  @Spec CommandSpec spec;
  @Mixin ApiConnection api;

  @Option(
      names = "--agent",
      paramLabel = "NAME",
      description =
          "The agent the drill's runs run as (configured, allowing none of the targets); required")
  String agent;

  @Option(
      names = "--backend",
      paramLabel = "NAME",
      description =
          "The backend the drill must run on (docker, microvm, k8s); refused before anything runs"
              + " if the control plane would run the agent elsewhere")
  String backend;

  @Option(
      names = "--out",
      paramLabel = "DIR",
      description = "Where drill.json and drill.md go (default: ./drill-ID)")
  Path outDir;

  @Option(
      names = "--unlisted-host",
      paramLabel = "NAME",
      description = "A host the allow-list must not name (default: " + DEFAULT_UNLISTED + ")")
  String unlistedHost = DEFAULT_UNLISTED;

  @Option(
      names = "--outside",
      paramLabel = "ADDR:PORT",
      description =
          "An IPv4 address the sandbox must not reach directly, also tried as a proxy and a DNS"
              + " server (default: "
              + DEFAULT_OUTSIDE
              + ", TEST-NET-1)")
  String outside = DEFAULT_OUTSIDE;

  @Option(
      names = "--metadata",
      paramLabel = "ADDR:PORT",
      description = "The cloud metadata service (default: " + DEFAULT_METADATA + ")")
  String metadata = DEFAULT_METADATA;

  @Option(
      names = "--host-target",
      paramLabel = "ADDR:PORT",
      description =
          "A service on the control plane's host the sandbox must not reach; repeatable (default:"
              + " the --url's address when it is not loopback; the gateway is always tried)")
  List<String> hostTargets = new ArrayList<>();

  @Option(
      names = "--dns-name",
      paramLabel = "NAME",
      description =
          "A name that resolves outside, which the sandbox must not resolve (default:"
              + " example.com)")
  String dnsName = "example.com";

  @Option(
      names = "--secret-path",
      paramLabel = "PATH",
      description =
          "A path that must not exist inside a sandbox, in addition to the Docker and containerd"
              + " sockets, /var/lib/docker, /var/lib/agent-sandbox and a service-account token"
              + " (name the control plane's --data-dir here); repeatable")
  List<String> secretPaths = new ArrayList<>();

  @Option(
      names = "--parallel",
      paramLabel = "N",
      description =
          "How many of the drill's runs live at once, 1 to 8 (default "
              + Drill.PARALLEL
              + ", or "
              + Drill.PARALLEL_EMULATED
              + " on a backend whose isolation is emulated: a microVM under software emulation)")
  Integer parallel;

  @Override
  public Integer call() throws IOException, InterruptedException {
    if (parallel != null && (parallel < 1 || parallel > 8)) {
      throw new ParameterException(spec.commandLine(), "--parallel must be from 1 to 8");
    }
    if (agent == null) {
      // Not picocli's required=true, which would demand it of drill verify too.
      throw new ParameterException(spec.commandLine(), "Missing required option: '--agent=NAME'");
    }
    Drill.Options options =
        new Drill.Options(
            agent,
            backend,
            outDir,
            unlistedHost,
            outside,
            metadata,
            hostTargets,
            dnsName,
            secretPaths,
            parallel);
    try (AdminApi client = api.open(spec)) {
      return Drill.run(
          client,
          options,
          new VersionProvider().getVersion()[0],
          spec.commandLine().getOut(),
          spec.commandLine().getErr());
    } catch (Drill.InvalidOption e) {
      throw new ParameterException(spec.commandLine(), e.getMessage(), e);
    }
  }

  /** {@code drill verify FILE}: a transcript checked against the audit log. */
  @Command(
      name = "verify",
      mixinStandardHelpOptions = true,
      description = {
        "Check a drill transcript against the audit log",
        "",
        "Each audit row the transcript cites must be in the log with the same type, run, data and"
            + " hash; the control plane must verify the chain, and the transcript's head must be"
            + " in it; and each step's verdict must follow from what the transcript recorded."
      },
      exitCodeListHeading = "%nExit codes:%n",
      exitCodeList = {
        "0:the transcript matches the log and every layer held",
        "1:the transcript does not match the log (each difference is named) or cannot be read",
        "2:the command line was wrong",
        "3:the transcript matches the log and records a layer that did not hold"
      },
      footerHeading = "%nExamples:%n",
      footer = {"  agent-sandbox drill verify evidence/2026-11-30/drill.json"})
  static final class Verify implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ApiConnection api;

    @Parameters(paramLabel = "FILE", description = "The drill.json to check")
    Path file;

    @Override
    public Integer call() throws IOException, InterruptedException {
      return Drill.verify(
          file, () -> api.open(spec), spec.commandLine().getOut(), spec.commandLine().getErr());
    }
  }
}
