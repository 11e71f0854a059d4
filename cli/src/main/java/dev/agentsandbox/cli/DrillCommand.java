package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.cli.DrillTranscript.Chain;
import dev.agentsandbox.cli.DrillTranscript.Configuration;
import dev.agentsandbox.cli.DrillTranscript.Host;
import dev.agentsandbox.cli.DrillTranscript.Leftovers;
import dev.agentsandbox.cli.DrillTranscript.StepResult;
import dev.agentsandbox.cli.DrillTranscript.Versions;
import dev.agentsandbox.policy.AllowList;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
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
 * {@code agent-sandbox drill}: the playbook's hostile task, run through the admin API against real
 * sandboxes, each layer's refusal checked, the evidence written as {@code drill.json} and {@code
 * drill.md}; {@code drill verify FILE} checks a transcript against the audit log.
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
          + DrillCommand.MAX_TTL_SECONDS
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
  /** Exit code when a layer did not hold. */
  static final int LAYER_FAILED = 3;

  /** The longest agent TTL the drill accepts: its run-forever step waits for the deadline. */
  static final long MAX_TTL_SECONDS = 300;

  static final String DEFAULT_UNLISTED = "unlisted.drill.agent-sandbox.example";

  /** TEST-NET-1 (RFC 5737): never routed, so a fence that fails leaks nothing to anyone. */
  static final String DEFAULT_OUTSIDE = "192.0.2.10:80";

  static final String DEFAULT_METADATA = "169.254.169.254:80";

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
              + DrillRunner.PARALLEL
              + ", or "
              + DrillRunner.PARALLEL_EMULATED
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
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    String drillId = newId();
    Path dir = outDir != null ? outDir : Path.of("drill-" + drillId);
    Instant startedAt = Instant.now();
    try (AdminApi client = api.open(spec)) {
      Preflight preflight = preflight(client, drillId);
      DrillSetup setup = preflight.setup();
      int atOnce = parallel != null ? parallel : defaultParallel(preflight.versions().isolation());
      Files.createDirectories(dir);
      err.println(
          "drill "
              + drillId
              + ": agent "
              + agent
              + " on "
              + preflight.versions().backend()
              + " ("
              + preflight.versions().runtime()
              + "), "
              + DrillSteps.all(setup).size()
              + " steps, "
              + atOnce
              + " runs at a time, at least "
              + setup.ttlSeconds()
              + " s");
      err.flush();
      List<DrillStep> steps = DrillSteps.all(setup);
      DrillRunner runner = new DrillRunner(client, err, atOnce);
      // Ctrl-C or a failure mid-drill: what it started is killed, not left to its deadline.
      Thread onExit = new Thread(runner::killUnfinished, "drill-kill-unfinished");
      Runtime.getRuntime().addShutdownHook(onExit);
      Map<String, DrillObservation> seen;
      try {
        seen = runner.run(setup, steps, preflight.auditBefore());
      } catch (IOException | RuntimeException e) {
        runner.killUnfinished();
        throw e;
      } finally {
        try {
          Runtime.getRuntime().removeShutdownHook(onExit);
        } catch (IllegalStateException shuttingDown) {
          // The JVM is exiting (Ctrl-C): the hook runs and kills what is unfinished.
        }
      }
      List<StepResult> results = new ArrayList<>();
      for (DrillStep step : steps) {
        results.add(StepResult.of(step, seen.get(step.name())));
      }
      Leftovers leftovers = leftovers(client, seen);
      Chain chain = chain(client, results);
      DrillTranscript transcript =
          new DrillTranscript(
              DrillTranscript.FORMAT,
              drillId,
              startedAt.toString(),
              Instant.now().toString(),
              DrillTranscript.verdictOf(results, leftovers, chain),
              new Host(hostName(), client.base()),
              preflight.versions(),
              preflight.configuration(),
              setup,
              results,
              leftovers,
              chain);
      transcript.write(dir.resolve("drill.json"));
      Files.writeString(
          dir.resolve("drill.md"), DrillMarkdown.render(transcript), StandardCharsets.UTF_8);
      summary(out, transcript, dir);
      return exitCode(transcript.verdict());
    }
  }

  /**
   * How many runs live at once when {@code --parallel} is not given: fewer where every guest's CPU
   * is emulated, since each guest then needs seconds of host CPU to boot and that time counts in
   * its TTL (docs/runs.md).
   */
  static int defaultParallel(String isolation) {
    return "emulated".equals(isolation) ? DrillRunner.PARALLEL_EMULATED : DrillRunner.PARALLEL;
  }

  /** 0 when every layer held, {@link #LAYER_FAILED} otherwise. */
  static int exitCode(String verdict) {
    return verdict.equals(DrillTranscript.HELD) ? 0 : LAYER_FAILED;
  }

  /** What the drill learns before it starts anything, and the refusals it makes then. */
  record Preflight(
      DrillSetup setup, Versions versions, Configuration configuration, long auditBefore) {}

  Preflight preflight(AdminApi client, String drillId) throws IOException, InterruptedException {
    JsonNode config = client.get("read the sandbox configuration", AdminApi.BASE);
    JsonNode settings = config.path("agents").path(agent);
    if (!settings.isObject()) {
      throw new IllegalStateException(
          "start the drill as agent "
              + agent
              + ": the sandbox configuration has no such agent (configure one with an empty"
              + " allow-list and a short ttl_seconds; docs/runs.md#the-hostile-task-drill)");
    }
    if (!config.path("enabled").asBoolean()) {
      throw new IllegalStateException(
          "start the drill: sandboxes are disabled (config edit, enabled: true)");
    }
    List<String> effective = new ArrayList<>();
    settings.path("effective_allow").forEach(e -> effective.add(e.asText()));
    AllowList allow = AllowList.parse(effective);
    for (int port : List.of(80, 443)) {
      if (allow.evaluate(unlistedHost, port) == AllowList.Verdict.ALLOWED) {
        throw new IllegalStateException(
            "start the drill as agent "
                + agent
                + ": its effective allow-list allows "
                + unlistedHost
                + ":"
                + port
                + ", so the unlisted-host step would prove nothing (name another with"
                + " --unlisted-host, or use an agent that does not allow it)");
      }
    }
    long ttl = settings.path("ttl_seconds").asLong();
    if (ttl > MAX_TTL_SECONDS) {
      throw new IllegalStateException(
          "start the drill as agent "
              + agent
              + ": its ttl_seconds is "
              + ttl
              + " and the run-forever step waits for it (use an agent with ttl_seconds at most "
              + MAX_TTL_SECONDS
              + ")");
    }
    JsonNode plan =
        client
            .call(
                "plan a run of " + agent,
                client
                    .request(AdminApi.BASE + "/plan", Duration.ofMinutes(2))
                    .header("Content-Type", "application/json")
                    .POST(AdminApi.json(Map.of("agent", agent, "command", List.of("true"))))
                    .build())
            .json();
    if (!plan.path("available").asBoolean(true)) {
      throw new IllegalStateException(
          "start the drill: backend "
              + plan.path("backend").asText()
              + " is unavailable on the control plane ("
              + plan.path("probe").asText()
              + ")");
    }
    if (backend != null && !backend.equals(plan.path("backend").asText())) {
      throw new IllegalStateException(
          "start the drill on backend "
              + backend
              + ": the control plane would run agent "
              + agent
              + " on "
              + plan.path("backend").asText()
              + " (set backend: "
              + backend
              + " in the sandbox configuration, or leave out --backend)");
    }
    List<String> credentials = new ArrayList<>();
    settings.path("credentials").fieldNames().forEachRemaining(credentials::add);
    List<String> paths = new ArrayList<>(DrillSetup.DEFAULT_SECRET_PATHS);
    paths.addAll(secretPaths);
    DrillSetup setup;
    try {
      setup =
          new DrillSetup(
              drillId,
              agent,
              unlistedHost,
              outside,
              metadata,
              hostTargets.isEmpty() ? defaultHostTargets(client.base()) : hostTargets,
              dnsName,
              paths,
              credentials,
              settings.path("resources").path("pids").asInt(),
              settings.path("resources").path("memory_mb").asInt(),
              ttl);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), e.getMessage(), e);
    }
    JsonNode newest =
        client.get("read the audit log", AdminApi.path(AdminApi.AUDIT, Map.of("limit", "1")));
    long auditBefore =
        newest.path("rows").isEmpty() ? 0 : newest.path("rows").get(0).path("id").asLong();
    Versions versions =
        new Versions(
            new VersionProvider().getVersion()[0],
            apiVersion(client),
            plan.path("backend").asText(),
            plan.path("runtime").asText(),
            plan.path("isolation").asText(),
            plan.path("probe").asText());
    Configuration configuration =
        new Configuration(
            config.path("version").asLong(), effective, ttl, settings.path("resources"));
    return new Preflight(setup, versions, configuration, auditBefore);
  }

  private static String apiVersion(AdminApi client) throws IOException, InterruptedException {
    return client
        .get("read the API's OpenAPI document", "/api/openapi.json")
        .path("info")
        .path("version")
        .asText("unknown");
  }

  /** The control plane's own address, when the URL names one that a sandbox could try. */
  static List<String> defaultHostTargets(String base) {
    URI uri = URI.create(base);
    String host = uri.getHost();
    if (host == null || !DrillSetup.ADDRESS.matcher(host).matches() || host.startsWith("127.")) {
      return List.of();
    }
    int port = uri.getPort() > 0 ? uri.getPort() : uri.getScheme().equals("https") ? 443 : 80;
    return List.of(host + ":" + port);
  }

  /** Every run the drill started must have ended, and none may be listed as live. */
  static Leftovers leftovers(AdminApi client, Map<String, DrillObservation> seen)
      throws IOException, InterruptedException {
    Map<String, String> runs = new LinkedHashMap<>();
    List<DrillObservation> all = new ArrayList<>();
    for (DrillObservation observation : seen.values()) {
      all.add(observation);
      if (observation.peer() != null) {
        all.add(observation.peer());
      }
    }
    for (DrillObservation observation : all) {
      if (observation.runId() != null) {
        String status =
            client
                .get("read run " + observation.runId(), AdminApi.RUNS + "/" + observation.runId())
                .path("status")
                .asText();
        runs.put(observation.runId(), status);
      }
    }
    List<String> listedLive = new ArrayList<>();
    for (String status : List.of("pending", "running")) {
      JsonNode live =
          client.get(
              "list " + status + " runs",
              AdminApi.path(AdminApi.RUNS, Map.of("status", status, "limit", "500")));
      live.path("runs")
          .forEach(
              r -> {
                if (runs.containsKey(r.path("run_id").asText())) {
                  listedLive.add(r.path("run_id").asText());
                }
              });
    }
    return leftoversOf(runs, listedLive);
  }

  static Leftovers leftoversOf(Map<String, String> runs, List<String> listedLive) {
    List<String> live =
        runs.entrySet().stream()
            .filter(e -> e.getValue().equals("pending") || e.getValue().equals("running"))
            .map(Map.Entry::getKey)
            .toList();
    List<DrillCheck> checks =
        List.of(
            DrillCheck.of(
                "cleanup",
                "every run the drill started has ended",
                !runs.isEmpty() && live.isEmpty(),
                live.isEmpty() ? runs.size() + " runs, all ended" : "still live: " + live),
            DrillCheck.of(
                "cleanup",
                "the control plane lists none of them as pending or running",
                listedLive.isEmpty(),
                listedLive.isEmpty() ? "none listed" : "listed live: " + listedLive));
    return new Leftovers(
        DrillStep.held(checks) ? DrillTranscript.HELD : DrillTranscript.FAILED, checks, runs);
  }

  /** The control plane's verification of the whole chain, whose head must cover every row cited. */
  static Chain chain(AdminApi client, List<StepResult> results)
      throws IOException, InterruptedException {
    JsonNode verified = client.get("verify the audit chain", AdminApi.AUDIT + "/verify");
    String head = verified.path("head").asText();
    int colon = head.indexOf(':');
    long headId = colon > 0 ? Long.parseLong(head.substring(0, colon)) : 0;
    String headHash = colon > 0 ? head.substring(colon + 1) : "";
    List<String> problems = new ArrayList<>();
    verified.path("problems").forEach(p -> problems.add(p.asText()));
    long newestCited =
        results.stream()
            .flatMap(r -> r.auditRowIds().stream())
            .mapToLong(Long::longValue)
            .max()
            .orElse(0);
    boolean ok = verified.path("ok").asBoolean(false);
    boolean covers = headId >= newestCited;
    if (!covers) {
      problems.add("the head " + headId + " is older than cited row " + newestCited);
    }
    return new Chain(
        ok && covers ? DrillTranscript.HELD : DrillTranscript.FAILED,
        ok,
        verified.path("rows_checked").asLong(),
        problems,
        headId,
        headHash);
  }

  private static void summary(PrintWriter out, DrillTranscript t, Path dir) {
    int width = t.steps().stream().mapToInt(s -> s.name().length()).max().orElse(10) + 2;
    for (StepResult step : t.steps()) {
      out.println(
          step.name()
              + " ".repeat(Math.max(2, width - step.name().length()))
              + (step.verdict().equals(DrillTranscript.HELD) ? "held" : "FAILED")
              + failedLayers(step.checks()));
    }
    out.println(
        "nothing-left-behind"
            + " ".repeat(Math.max(2, width - "nothing-left-behind".length()))
            + (t.leftovers().verdict().equals(DrillTranscript.HELD) ? "held" : "FAILED"));
    out.println(
        "audit-chain"
            + " ".repeat(Math.max(2, width - "audit-chain".length()))
            + (t.auditChain().verdict().equals(DrillTranscript.HELD) ? "held" : "FAILED")
            + " (head "
            + t.auditChain().headId()
            + ")");
    out.println(
        (t.verdict().equals(DrillTranscript.HELD) ? "every layer held" : "A LAYER DID NOT HOLD")
            + "; evidence in "
            + dir.resolve("drill.md")
            + " and "
            + dir.resolve("drill.json"));
    out.flush();
  }

  private static String failedLayers(List<DrillCheck> checks) {
    List<String> failed =
        checks.stream().filter(c -> !c.held()).map(c -> c.layer() + ": " + c.seen()).toList();
    return failed.isEmpty() ? "" : " (" + String.join("; ", failed) + ")";
  }

  private static String newId() {
    String alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
    SecureRandom random = new SecureRandom();
    StringBuilder id = new StringBuilder();
    for (int i = 0; i < 12; i++) {
      id.append(alphabet.charAt(random.nextInt(alphabet.length())));
    }
    return id.toString();
  }

  private static String hostName() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (UnknownHostException e) {
      return "unknown";
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
      DrillTranscript transcript = DrillTranscript.read(file);
      try (AdminApi client = api.open(spec)) {
        List<String> problems = DrillVerifier.problems(transcript, client);
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if (!problems.isEmpty()) {
          err.println(
              "drill verify: "
                  + file
                  + " does NOT match the audit log; "
                  + problems.size()
                  + " problem(s):");
          problems.forEach(p -> err.println("  " + p));
          err.flush();
          return Main.FAILED;
        }
        out.println(
            "ok: drill "
                + transcript.drillId()
                + ", "
                + transcript.steps().size()
                + " steps and "
                + DrillVerifier.citedRows(transcript).size()
                + " audit rows match the log; chain verified up to "
                + transcript.auditChain().headId()
                + "; verdict "
                + transcript.verdict());
        out.flush();
        return exitCode(transcript.verdict());
      }
    }
  }
}
