package dev.agentsandbox.runs;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.policy.run.Redactor;
import dev.agentsandbox.store.AuditEvent;
import dev.agentsandbox.store.RunRecord;
import dev.agentsandbox.store.RunStatus;
import dev.agentsandbox.store.Store;
import java.time.Clock;
import java.util.concurrent.ExecutorService;

/**
 * Turns an admitted run into a live one: writes the run's row and its {@code agent_sandbox.launch}
 * audit row before anything is created, then hands the run to {@link RunLifecycle} on the executor.
 * Also writes the {@code agent_sandbox.refused} row of a refused request. Thread-safe.
 */
final class RunLauncher {
  static final String LAUNCH = "agent_sandbox.launch";
  static final String REFUSED = "agent_sandbox.refused";

  private final Store store;
  private final RunSettings settings;
  private final Clock clock;
  private final ExecutorService executor;
  private final ObjectMapper json;
  private final RunLifecycle lifecycle;

  RunLauncher(
      Store store,
      RunSettings settings,
      Clock clock,
      ExecutorService executor,
      ObjectMapper json,
      RunLifecycle lifecycle) {
    this.store = store;
    this.settings = settings;
    this.clock = clock;
    this.executor = executor;
    this.json = json;
    this.lifecycle = lifecycle;
  }

  /**
   * Launches the run, entered in {@code live} before its lifecycle starts. The slot is released
   * here if the run never reaches its lifecycle, else when the lifecycle retires it.
   */
  LiveRun launch(String actor, Admission.Admitted admitted, LiveRuns live) {
    RunSpec spec = admitted.spec();
    try {
      Redactor redactor = new Redactor(spec.env().values());
      RunRecord record =
          new RunRecord(
              spec.runId(),
              spec.agent(),
              admitted.selection().backend().name(),
              admitted.selection().probe().runtime(),
              RunStatus.PENDING,
              RunViews.command(json, redactor, spec.command()),
              clock.instant(),
              null,
              null,
              null,
              null,
              null,
              spec.expiresAt(),
              settings.instanceId());
      // The launch row is committed before anything is created (docs/architecture.md invariant
      // 10): a run the audit log does not know about never starts.
      store.runs().insert(record);
      store
          .audit()
          .append(
              new AuditEvent(
                  LAUNCH,
                  actor,
                  spec.agent(),
                  spec.runId(),
                  RunViews.launchData(json, spec, admitted.selection().probe(), record, redactor)));
      LiveRun run =
          new LiveRun(
              spec,
              actor,
              admitted.selection().backend(),
              admitted.selection().probe(),
              new RunOutput(redactor, settings.tailBytes()),
              new EgressRecorder(
                  spec.runId(), spec.agent(), actor, store.audit(), json, settings.decisionsKept()),
              record,
              admitted.slot());
      live.add(run);
      try {
        executor.execute(() -> lifecycle.execute(run, clock.instant().plus(spec.ttl())));
      } catch (RuntimeException e) {
        live.remove(run);
        throw e;
      }
      return run;
    } catch (RuntimeException e) {
      // Nothing was created; a row already written stays pending and is recovered at next start.
      admitted.slot().release();
      throw e;
    }
  }

  /** Audits the refusal and returns it, for the caller to throw. */
  RunRefusedException refuse(String actor, RunRequest request, RunRefusedException e) {
    ObjectNode data = json.createObjectNode();
    data.put("reason", e.refusal().code());
    data.put("message", e.getMessage());
    ArrayNode problems = data.putArray("problems");
    e.problems().forEach(problems::add);
    ArrayNode keys = data.putArray("env_keys");
    request.env().keySet().stream().sorted().forEach(keys::add);
    data.set(
        "command", RunViews.command(json, new Redactor(request.env().values()), request.command()));
    store.audit().append(new AuditEvent(REFUSED, actor, request.agent(), null, data));
    return e;
  }
}
