package dev.agentsandbox.runs;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.backend.BackendSelector;
import dev.agentsandbox.backend.SandboxPlan;
import dev.agentsandbox.policy.run.Redactor;
import dev.agentsandbox.store.AuditEvent;
import dev.agentsandbox.store.RunRecord;
import dev.agentsandbox.store.RunStatus;
import dev.agentsandbox.store.Store;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;

/**
 * The runs of this control plane: admits or refuses each request ({@link RunAdmission}, every
 * refusal audited), launches what is admitted ({@link RunLauncher}, which writes the launch row
 * before anything is created) and follows it ({@link RunLifecycle}); answers for live and stored
 * runs. Thread-safe.
 */
public final class RunService {
  static final String KILL = "agent_sandbox.kill";

  /** How much longer than {@code wait} shutdown waits for warm sandboxes being prepared. */
  static final Duration WARM_PREPARATION_BOUND = Duration.ofSeconds(60);

  private final Store store;
  private final RunSettings settings;
  private final Clock clock;
  private final ObjectMapper json; // audit-row data only; the API's JSON is the server's
  private final RunAdmission admission;
  private final RunSlots slots;
  private final RunLauncher launcher;
  private final RunLifecycle lifecycle;
  private final LiveRuns live;
  private final WarmPool pool;
  private final ExecutorService executor;

  /** A run service whose runs get credentials and keep outputs as {@code contract} says. */
  public RunService(
      ConfigSource configs,
      BackendSelector selector,
      Store store,
      OperatorEgress operator,
      RunSettings settings,
      Clock clock,
      ExecutorService executor,
      ObjectMapper json,
      RunContractServices contract) {
    this.store = store;
    this.settings = settings;
    this.clock = clock;
    this.json = json;
    this.live = new LiveRuns(settings.finishedRunsKept());
    this.admission = new RunAdmission(configs, selector, operator, contract.credentials(), clock);
    this.slots = new RunSlots(settings.maxConcurrentRuns());
    this.executor = executor;
    this.pool =
        new WarmPool(
            configs, selector, slots, admission::template, executor, clock, settings.warmMaxIdle());
    this.lifecycle = new RunLifecycle(store, clock, json, live::retire, contract);
    this.launcher =
        new RunLauncher(store, settings, clock, executor, json, lifecycle, contract.credentials());
  }

  /** What a run of this request would create, creating nothing; see {@link RunAdmission#plan}. */
  public PlanView plan(RunRequest request) {
    RunAdmission.Planned planned = admission.plan(request);
    SandboxPlan plan = planned.selection().backend().plan(planned.spec());
    return RunViews.plan(
        planned.spec(),
        plan,
        planned.selection().probe(),
        planned.selection().stillProbing(),
        planned.enabled(),
        planned.configured());
  }

  /**
   * Starts a run and returns at once with its id; the run goes on on the service's executor.
   *
   * @throws RunRefusedException when the run must not happen; an {@code agent_sandbox.refused} row
   *     has been written
   */
  public String start(String actor, RunRequest request) {
    return launch(actor, request).runId();
  }

  /**
   * Starts a run and waits for its result (exit status, outputs collected, rows written); the
   * sandbox is removed after this returns, and its {@code agent_sandbox.teardown} row follows.
   */
  public RunView run(String actor, RunRequest request) throws InterruptedException {
    LiveRun run = launch(actor, request);
    try {
      run.ended.get();
    } catch (ExecutionException e) {
      throw new RunException("running " + run.runId() + ": " + e.getCause().getMessage(), e);
    }
    return view(run.runId());
  }

  private LiveRun launch(String actor, RunRequest request) {
    return switch (admission.admit(request, slots, pool)) {
      case Admission.Refused refused -> throw launcher.refuse(actor, request, refused.refusal());
      case Admission.Admitted admitted -> {
        if (admitted.warm().isPresent()) {
          executor.execute(pool::refill); // prepare its replacement
        }
        yield launcher.launch(actor, request, admitted, live);
      }
    };
  }

  /** Asks a live run to stop; false when it had already ended, RunNotFoundException if none. */
  public boolean kill(String actor, String runId) {
    LiveRun run = live.live(runId).orElse(null);
    if (run == null) {
      if (RunIds.valid(runId) && store.runs().find(runId).isPresent()) {
        return false;
      }
      throw new RunNotFoundException(runId);
    }
    if (run.ended.isDone()) {
      return false; // its result is recorded; only its removal is left
    }
    ObjectNode data = json.createObjectNode();
    data.put("requested_by", actor);
    store.audit().append(new AuditEvent(KILL, actor, run.spec.agent(), runId, data));
    return run.kill();
  }

  private RunRecord stored(String runId) {
    return (RunIds.valid(runId) ? store.runs().find(runId) : Optional.<RunRecord>empty())
        .orElseThrow(() -> new RunNotFoundException(runId));
  }

  /** The run's state and, once it ended, its result. */
  public RunView view(String runId) {
    Optional<LiveRun> known = live.held(runId);
    if (known.isPresent()) {
      return RunViews.run(known.get());
    }
    return RunViews.stored(json, stored(runId), store.audit());
  }

  /**
   * The output of a run, for streaming: live while this control plane holds the run, else the
   * stored tail as output that has already ended.
   */
  public RunOutput output(String runId) {
    Optional<LiveRun> known = live.held(runId);
    if (known.isPresent()) {
      return known.get().output;
    }
    RunRecord record = stored(runId);
    // Already redacted when it was stored; a second pass with no env values changes nothing.
    RunOutput stored = new RunOutput(new Redactor(List.of()), settings.tailBytes());
    if (record.outputTail() != null) {
      stored.append(record.outputTail().getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }
    stored.close();
    return stored;
  }

  /**
   * Whether the reaper must spare the run's resources now: it is live here, live on another replica
   * sharing this store, or unknown to this store. An unknown run belongs to another control plane
   * on the same daemon or cluster, or to a store that was replaced; its resources go when their
   * expiry label passes, never earlier, so control planes do not reap each other.
   */
  public boolean isLive(String runId) {
    if (live.live(runId).isPresent() || !RunIds.valid(runId)) {
      return true;
    }
    return store
        .runs()
        .find(runId)
        .map(r -> r.status().active() && r.expiresAt().isAfter(clock.instant()))
        .orElse(true);
  }

  /**
   * How many run slots are taken now: live runs, and warm sandboxes (ready or being prepared),
   * which count against the same limit.
   */
  public int liveCount() {
    return slots.taken();
  }

  /**
   * The newest runs matching every given filter (null or empty: any), newest first; {@code labels}
   * keeps the runs that carry every one.
   */
  public List<RunRecord> recent(
      String agent, RunStatus status, Instant since, Map<String, String> labels, int limit) {
    return store.runs().recent(agent, status, since, labels, limit);
  }

  /**
   * Marks runs that a previous life of this control plane left live (or whose expiry passed) as
   * failed, each with an {@code agent_sandbox.failure} row; their resources are the reaper's.
   */
  public int recover() {
    return lifecycle.recover(settings.instanceId(), live.liveIds());
  }

  /**
   * Removes every warm sandbox (waiting for those being prepared), then asks every live run to stop
   * and waits up to {@code wait} for them to end and be removed (runs whose result is recorded but
   * whose sandbox is still being removed included).
   */
  public void shutdown(Duration wait) throws InterruptedException {
    // A preparation in flight cannot be cut short without leaving half a sandbox: it gets the time
    // a proxy may take to start on top.
    pool.close(wait.plus(WARM_PREPARATION_BOUND));
    live.stopAll(wait, clock);
  }

  /**
   * One pass of the warm pool's upkeep: drains warm sandboxes the configuration no longer matches
   * or that idled too long, and prepares what each agent's {@code warm} asks for as far as free run
   * slots allow. The control plane calls it periodically.
   */
  public void maintainWarmPool() {
    pool.refill();
  }

  /** Per agent, warm sandboxes ready and being prepared: {@code {agent: {state: count}}}. */
  public Map<String, Map<String, Integer>> warmSandboxes() {
    Map<String, Map<String, Integer>> out = new java.util.TreeMap<>();
    pool.counts()
        .forEach(
            (agent, counts) ->
                out.put(agent, Map.of("ready", counts.ready(), "preparing", counts.preparing())));
    return out;
  }

  /** How many warm sandboxes left the pool since start, by outcome (handed_over, drained, ...). */
  public Map<String, Long> warmOutcomes() {
    return pool.outcomes();
  }

  /** A plain map view of where each live run is, for metrics and health. */
  public Map<String, String> liveRuns() {
    return live.statuses();
  }
}
