package dev.agentsandbox.cli.drill;

import dev.agentsandbox.cli.AdminApi;
import dev.agentsandbox.cli.drill.DrillTranscript.Chain;
import dev.agentsandbox.cli.drill.DrillTranscript.Host;
import dev.agentsandbox.cli.drill.DrillTranscript.Leftovers;
import dev.agentsandbox.cli.drill.DrillTranscript.StepResult;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The hostile-task drill (docs/runs.md), as {@code agent-sandbox drill} runs it: the preflight
 * ({@link Preflight}), every step's runs through the admin API ({@link DrillRunner}), the judgement
 * of each layer ({@link DrillSteps}), the closing checks ({@link DrillEnd}) and the evidence
 * ({@link DrillTranscript}, {@link DrillMarkdown}); and {@code drill verify}, a transcript checked
 * against the audit log ({@link DrillVerifier}). The command line's {@code DrillCommand} parses the
 * options and calls {@link #run} or {@link #verify}; everything else is here.
 */
public final class Drill {
  /** Exit code when a layer did not hold. */
  public static final int LAYER_FAILED = 3;

  /** Exit code when the drill could not be carried out, or a transcript does not match the log. */
  public static final int FAILED = 1;

  /** The longest agent TTL the drill accepts: its run-forever step waits for the deadline. */
  public static final long MAX_TTL_SECONDS = 300;

  /** Runs of the drill live at once by default; the control plane's own cap is 16. */
  public static final int PARALLEL = 4;

  /**
   * Runs live at once by default where the backend's isolation is emulated (QEMU under TCG): each
   * guest needs seconds of host CPU to boot, so more at once on a small host only slows every one.
   */
  public static final int PARALLEL_EMULATED = 2;

  public static final String DEFAULT_UNLISTED = "unlisted.drill.agent-sandbox.example";

  /** TEST-NET-1 (RFC 5737): never routed, so a fence that fails leaks nothing to anyone. */
  public static final String DEFAULT_OUTSIDE = "192.0.2.10:80";

  public static final String DEFAULT_METADATA = "169.254.169.254:80";

  /**
   * What the command line asked for; docs/cli.md names each option.
   *
   * @param parallel runs at once, or null for {@link #defaultParallel}
   * @param outDir where the evidence goes, or null for {@code ./drill-ID}
   */
  public record Options(
      String agent,
      String backend,
      Path outDir,
      String unlistedHost,
      String outside,
      String metadata,
      List<String> hostTargets,
      String dnsName,
      List<String> secretPaths,
      Integer parallel) {
    public Options {
      hostTargets = List.copyOf(hostTargets);
      secretPaths = List.copyOf(secretPaths);
    }
  }

  /** A value of an option that the drill's grammar refuses (a usage error, exit 2). */
  public static final class InvalidOption extends RuntimeException {
    InvalidOption(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /** Opens the admin API (the command line's connection options), once the file has been read. */
  @FunctionalInterface
  public interface Connection {
    AdminApi open() throws IOException;
  }

  private Drill() {}

  /**
   * Runs the drill and files its evidence; returns 0 when every layer held, {@link #LAYER_FAILED}
   * otherwise. Progress goes to {@code err}, the summary to {@code out}.
   *
   * @throws InvalidOption when an option's value is refused, before anything runs
   */
  public static int run(
      AdminApi client, Options options, String cliVersion, PrintWriter out, PrintWriter err)
      throws IOException, InterruptedException {
    String drillId = newId();
    Path dir = options.outDir() != null ? options.outDir() : Path.of("drill-" + drillId);
    Instant startedAt = Instant.now();
    Preflight preflight = Preflight.of(client, options, drillId, cliVersion);
    DrillSetup setup = preflight.setup();
    int atOnce =
        options.parallel() != null
            ? options.parallel()
            : defaultParallel(preflight.versions().isolation());
    Files.createDirectories(dir);
    err.println(
        "drill "
            + drillId
            + ": agent "
            + options.agent()
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
    Leftovers leftovers = DrillEnd.leftovers(client, seen);
    Chain chain = DrillEnd.chain(client, results);
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

  /**
   * {@code drill verify FILE}: 0 when the transcript matches the log and every layer held, {@link
   * #LAYER_FAILED} when it matches and records a layer that did not, {@link #FAILED} when it does
   * not match (each difference printed to {@code err}).
   */
  public static int verify(Path file, Connection api, PrintWriter out, PrintWriter err)
      throws IOException, InterruptedException {
    DrillTranscript transcript = DrillTranscript.read(file);
    List<String> problems;
    try (AdminApi client = api.open()) {
      problems = DrillVerifier.problems(transcript, client);
    }
    if (!problems.isEmpty()) {
      err.println(
          "drill verify: "
              + file
              + " does NOT match the audit log; "
              + problems.size()
              + " problem(s):");
      problems.forEach(p -> err.println("  " + p));
      err.flush();
      return FAILED;
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

  /**
   * How many runs live at once when {@code --parallel} is not given: fewer where every guest's CPU
   * is emulated, since each guest then needs seconds of host CPU to boot and that time counts in
   * its TTL (docs/runs.md).
   */
  static int defaultParallel(String isolation) {
    return "emulated".equals(isolation) ? PARALLEL_EMULATED : PARALLEL;
  }

  /** 0 when every layer held, {@link #LAYER_FAILED} otherwise. */
  static int exitCode(String verdict) {
    return verdict.equals(DrillTranscript.HELD) ? 0 : LAYER_FAILED;
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
}
