package dev.agentsandbox.cli.drill;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.cli.AdminApi;
import dev.agentsandbox.cli.drill.DrillObservation.AuditRef;
import dev.agentsandbox.cli.drill.DrillObservation.Decision;
import dev.agentsandbox.cli.drill.DrillObservation.Refusal;
import dev.agentsandbox.policy.event.Refused;
import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;

/**
 * Carries the drill's steps out through the admin API: each step's run started with the drill's
 * labels, followed to its end and its teardown row, then read back with its proxy decisions and
 * audit rows. Runs go at most {@code --parallel} at a time (the longest, run-forever, first), so a
 * drill takes about the agent's TTL plus a minute.
 */
final class DrillRunner {
  /**
   * How long after its deadline a run may take to end and be torn down before the drill gives up.
   */
  static final Duration GRACE = Duration.ofMinutes(2);

  private static final Duration POLL = Duration.ofMillis(500);

  private final AdminApi api;
  private final PrintWriter progress;
  private final int parallel;

  /** Runs started and not yet followed to their end: what an interrupted drill kills. */
  private final Set<String> live = ConcurrentHashMap.newKeySet();

  DrillRunner(AdminApi api, PrintWriter progress, int parallel) {
    this.api = api;
    this.progress = progress;
    this.parallel = parallel;
  }

  /**
   * Kills every run the drill started that it has not seen end (an interrupted or failed drill
   * leaves nothing running until its deadline). Best effort: each kill is tried once.
   */
  void killUnfinished() {
    for (String runId : List.copyOf(live)) {
      try {
        api.exchange(
            api.request(AdminApi.RUNS + "/" + runId, Duration.ofSeconds(10)).DELETE().build());
        progress.println("drill: killed run " + runId + " (the drill did not see it end)");
        progress.flush();
      } catch (IOException | RuntimeException e) {
        progress.println("drill: kill run " + runId + ": " + e.getMessage());
        progress.flush();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /** Runs every step and returns what was seen of each, in the order of {@code steps}. */
  Map<String, DrillObservation> run(DrillSetup setup, List<DrillStep> steps, long auditBefore)
      throws IOException, InterruptedException {
    List<DrillStep> ordered = new ArrayList<>(steps);
    // The step that waits for the deadline starts first, so the others run beside it.
    ordered.sort((a, b) -> Boolean.compare(!isForever(a), !isForever(b)));
    Semaphore slots = new Semaphore(parallel);
    Map<String, Future<DrillObservation>> futures = new LinkedHashMap<>();
    try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
      for (DrillStep step : ordered) {
        futures.put(
            step.name(),
            pool.submit(
                () -> {
                  // A step that attacks another live sandbox has two runs live at once.
                  int needs = step.peer() == null ? 1 : Math.min(2, parallel);
                  slots.acquire(needs);
                  try {
                    return step.refusedByApi()
                        ? observeRefusal(setup, step, auditBefore)
                        : step.peer() != null
                            ? observeAgainstPeer(setup, step)
                            : observeRun(setup, step);
                  } finally {
                    slots.release(needs);
                  }
                }));
      }
      Map<String, DrillObservation> seen = new LinkedHashMap<>();
      for (DrillStep step : steps) {
        try {
          seen.put(step.name(), futures.get(step.name()).get());
        } catch (ExecutionException e) {
          Throwable cause = e.getCause();
          if (cause instanceof IOException io) {
            throw io;
          }
          if (cause instanceof InterruptedException interrupted) {
            throw interrupted;
          }
          throw new IOException("drill step " + step.name() + ": " + cause.getMessage(), cause);
        }
      }
      return seen;
    }
  }

  private static boolean isForever(DrillStep step) {
    return step.name().equals("run-forever");
  }

  /** The request body of a step's run. */
  static Map<String, Object> body(DrillSetup setup, DrillStep step) {
    return body(setup, step.name(), step.command(), step.env());
  }

  /** A run request of the drill: the step's label names the step (or its target). */
  static Map<String, Object> body(
      DrillSetup setup, String stepLabel, List<String> command, Map<String, String> env) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("agent", setup.agent());
    body.put("command", command);
    body.put("env", env);
    body.put("labels", Map.of("drill", setup.drillId(), "drill-step", stepLabel));
    return body;
  }

  private AdminApi.Answer start(DrillSetup setup, DrillStep step)
      throws IOException, InterruptedException {
    return start(body(setup, step));
  }

  private AdminApi.Answer start(Map<String, Object> body) throws IOException, InterruptedException {
    return api.exchange(
        api.request(AdminApi.RUNS, Duration.ofMinutes(2))
            .header("Content-Type", "application/json")
            .POST(AdminApi.json(body))
            .build());
  }

  /**
   * A step that attacks another live sandbox: its target is started first and watched until it has
   * printed what the attack needs (at most the agent's TTL); then the attack runs with it and is
   * followed to its end; only then is the target killed, so it was live for the whole attack, and
   * followed to its teardown too.
   */
  private DrillObservation observeAgainstPeer(DrillSetup setup, DrillStep step)
      throws IOException, InterruptedException {
    AdminApi.Answer started =
        start(body(setup, step.name() + "-target", step.peer().command(), Map.of()));
    if (started.status() / 100 != 2) {
      say(step, "target refused by the API: " + started.status());
      return new DrillObservation(
          null, null, null, null, "", List.of(), List.of(), refusal(started));
    }
    String targetId = started.json().path("run_id").asText();
    live.add(targetId);
    say(step, "target run " + targetId);
    Instant until = Instant.now().plusSeconds(setup.ttlSeconds());
    Optional<List<String>> learned = Optional.empty();
    JsonNode target = api.get("read run " + targetId, AdminApi.RUNS + "/" + targetId);
    while (live(target) && Instant.now().isBefore(until)) {
      learned = step.peer().learned().apply(sofar(target));
      if (learned.isPresent()) {
        break;
      }
      Thread.sleep(POLL.toMillis());
      target = api.get("read run " + targetId, AdminApi.RUNS + "/" + targetId);
    }
    DrillObservation attack;
    if (learned.isPresent() && live(target)) {
      List<String> command = new ArrayList<>(step.command());
      command.addAll(learned.get());
      AdminApi.Answer attacking = start(body(setup, step.name(), command, step.env()));
      if (attacking.status() / 100 != 2) {
        say(step, "refused by the API: " + attacking.status());
        attack =
            new DrillObservation(
                null, null, null, null, "", List.of(), List.of(), refusal(attacking));
      } else {
        String runId = attacking.json().path("run_id").asText();
        live.add(runId);
        say(step, "run " + runId + " attacks " + learned.get());
        attack = follow(setup, step, runId);
      }
    } else {
      say(step, "target run " + targetId + " never said where it listens: no attack");
      attack = new DrillObservation(null, null, null, null, "", List.of(), List.of(), null);
    }
    api.exchange(
        api.request(AdminApi.RUNS + "/" + targetId, Duration.ofSeconds(30)).DELETE().build());
    return attack.withPeer(follow(setup, step, targetId));
  }

  /** A live run's output so far, as an observation (for what the drill learns from it). */
  private static DrillObservation sofar(JsonNode run) {
    return new DrillObservation(
        run.path("run_id").asText(null),
        run.path("status").asText(null),
        null,
        null,
        run.path("output_tail").asText(""),
        List.of(),
        List.of(),
        null);
  }

  private DrillObservation observeRun(DrillSetup setup, DrillStep step)
      throws IOException, InterruptedException {
    AdminApi.Answer started = start(setup, step);
    if (started.status() / 100 != 2) {
      say(step, "refused by the API: " + started.status());
      return new DrillObservation(
          null, null, null, null, "", List.of(), List.of(), refusal(started));
    }
    String runId = started.json().path("run_id").asText();
    live.add(runId);
    say(step, "run " + runId);
    return follow(setup, step, runId);
  }

  /** Follows a run to its end and teardown and reads what it left in the API and the log. */
  private DrillObservation follow(DrillSetup setup, DrillStep step, String runId)
      throws IOException, InterruptedException {
    Instant until = Instant.now().plusSeconds(setup.ttlSeconds()).plus(GRACE);
    JsonNode run = api.get("read run " + runId, AdminApi.RUNS + "/" + runId);
    while (live(run) && Instant.now().isBefore(until)) {
      Thread.sleep(POLL.toMillis());
      run = api.get("read run " + runId, AdminApi.RUNS + "/" + runId);
    }
    if (live(run)) {
      // Past its deadline and the grace: the drill kills what it started rather than leave it.
      api.exchange(
          api.request(AdminApi.RUNS + "/" + runId, Duration.ofSeconds(30)).DELETE().build());
    }
    List<AuditRef> rows = awaitTeardown(runId, until.plus(GRACE));
    live.remove(runId);
    run = api.get("read run " + runId, AdminApi.RUNS + "/" + runId);
    List<Decision> egress = new ArrayList<>();
    run.path("egress").forEach(d -> egress.add(Decision.of(d)));
    say(step, "run " + runId + " ended: " + run.path("status").asText());
    return new DrillObservation(
        runId,
        run.path("status").asText(null),
        run.path("end").isTextual() ? run.path("end").asText() : null,
        run.path("exit_status").isInt() ? run.path("exit_status").asInt() : null,
        run.path("output_tail").asText(""),
        egress,
        rows,
        null);
  }

  private static boolean live(JsonNode run) {
    String status = run.path("status").asText();
    return status.equals("pending") || status.equals("running");
  }

  /** The run's audit rows once its teardown row is there (it is the last row a run writes). */
  private List<AuditRef> awaitTeardown(String runId, Instant until)
      throws IOException, InterruptedException {
    while (true) {
      List<AuditRef> rows = new ArrayList<>();
      JsonNode answer =
          api.get(
              "read the audit rows of run " + runId,
              AdminApi.path(AdminApi.AUDIT, Map.of("run", runId, "limit", "1000")));
      answer.path("rows").forEach(r -> rows.add(AuditRef.of(r)));
      if (rows.stream().anyMatch(r -> r.type().equals(DrillSteps.TEARDOWN))
          || Instant.now().isAfter(until)) {
        return rows;
      }
      Thread.sleep(POLL.toMillis());
    }
  }

  private DrillObservation observeRefusal(DrillSetup setup, DrillStep step, long auditBefore)
      throws IOException, InterruptedException {
    AdminApi.Answer answer = start(setup, step);
    if (answer.status() / 100 == 2) {
      // Not refused: a hole. The run is followed to its end so that nothing is left behind.
      String runId = answer.json().path("run_id").asText();
      live.add(runId);
      say(step, "NOT refused: run " + runId + " started");
      return follow(setup, step, runId);
    }
    say(step, "refused by the API: " + answer.status());
    List<AuditRef> rows = new ArrayList<>();
    JsonNode refused =
        api.get(
            "read the audit log's refusals",
            AdminApi.path(
                AdminApi.AUDIT,
                Map.of(
                    "type",
                    DrillSteps.REFUSED,
                    "agent",
                    setup.agent(),
                    "after_id",
                    Long.toString(auditBefore),
                    "limit",
                    "1000")));
    refused.path("rows").forEach(r -> rows.add(AuditRef.of(r)));
    // The step's command carries the drill's id: only this drill's refusal is cited.
    String marker = step.command().getLast();
    List<AuditRef> ours =
        rows.stream()
            .filter(
                r ->
                    r.as(Refused.class)
                        .filter(e -> e.command().stream().anyMatch(a -> a.contains(marker)))
                        .isPresent())
            .toList();
    return new DrillObservation(null, null, null, null, "", List.of(), ours, refusal(answer));
  }

  private static Refusal refusal(AdminApi.Answer answer) {
    String error;
    try {
      error = answer.json().path("error").asText(null);
    } catch (IOException e) {
      error = null;
    }
    return new Refusal(answer.status(), error);
  }

  private void say(DrillStep step, String what) {
    synchronized (progress) {
      progress.println("drill: " + step.name() + ": " + what);
      progress.flush();
    }
  }
}
