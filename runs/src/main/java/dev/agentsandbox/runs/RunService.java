package dev.agentsandbox.runs;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.backend.BackendSelector;
import dev.agentsandbox.backend.BackendSelector.Selection;
import dev.agentsandbox.backend.NoUsableBackendException;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.SandboxBackend;
import dev.agentsandbox.backend.SandboxPlan;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.AgentSettings;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.RunEgress;
import dev.agentsandbox.policy.config.SandboxConfig;
import dev.agentsandbox.policy.config.ScopeRule;
import dev.agentsandbox.policy.run.EnvScreen;
import dev.agentsandbox.policy.run.Redactor;
import dev.agentsandbox.store.AuditEvent;
import dev.agentsandbox.store.RunRecord;
import dev.agentsandbox.store.RunStatus;
import dev.agentsandbox.store.Store;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;

/**
 * Plans, launches and follows runs: refuses what must not run (each refusal audited), writes the
 * launch row before anything is created, then hands the run to {@link RunLifecycle} on its own
 * thread. Thread-safe.
 */
public final class RunService {
  static final String LAUNCH = "agent_sandbox.launch";
  static final String REFUSED = "agent_sandbox.refused";
  static final String KILL = "agent_sandbox.kill";

  /** How long after its deadline a run's leftovers become fair game for the reaper. */
  static final Duration REAP_GRACE = Duration.ofMinutes(5);

  private final ConfigSource configs;
  private final BackendSelector selector;
  private final Store store;
  private final OperatorEgress operator;
  private final RunSettings settings;
  private final Clock clock;
  private final ExecutorService executor;
  private final ObjectMapper json;
  private final RunLifecycle lifecycle;
  private final Map<String, LiveRun> live = new ConcurrentHashMap<>();
  private final Map<String, LiveRun> finished;

  public RunService(
      ConfigSource configs,
      BackendSelector selector,
      Store store,
      OperatorEgress operator,
      RunSettings settings,
      Clock clock,
      ExecutorService executor,
      ObjectMapper json) {
    this.configs = configs;
    this.selector = selector;
    this.store = store;
    this.operator = operator;
    this.settings = settings;
    this.clock = clock;
    this.executor = executor;
    this.json = json;
    this.finished = RunViews.boundedMap(settings.finishedRunsKept());
    this.lifecycle = new RunLifecycle(store, clock, json, this::retire);
  }

  /**
   * What a run of this request would create, without creating anything. Works before sandboxes are
   * enabled and for agents not yet configured (with the defaults they would get), so a reviewer can
   * read the manifests before turning anything on.
   */
  public ObjectNode plan(RunRequest request) {
    checkRequest(request);
    SandboxConfig config = configs.sandbox();
    AgentSettings agent = config.agents().get(request.agent());
    boolean configured = agent != null;
    if (agent == null) {
      agent =
          new AgentSettings(
              AllowList.EMPTY,
              AgentSettings.DEFAULT_IMAGE,
              request.agent(),
              AgentSettings.DEFAULT_TTL_SECONDS,
              Resources.DEFAULT);
    }
    Selection selection;
    String wanted = config.backend().wireName();
    Optional<SandboxBackend> named =
        wanted.equals(BackendSelector.AUTO) ? Optional.empty() : selector.named(wanted);
    if (named.isPresent()) {
      // A named backend is planned even where it cannot run now: reviewing the manifests for a
      // cluster before pointing the control plane at it is the point of plan. The probe says so.
      selection = new Selection(named.get(), named.get().probe());
    } else {
      try {
        selection = selector.select(wanted, config.requireRuntimeClass());
      } catch (NoUsableBackendException e) {
        throw new RunRefusedException(
            config.requireRuntimeClass()
                ? Refusal.RUNTIME_CLASS_REQUIRED
                : Refusal.BACKEND_UNAVAILABLE,
            "planning a run of agent " + request.agent() + ": " + e.getMessage(),
            e.attempts());
      }
    }
    RunSpec spec = spec(RunIds.next(), request, agent, config);
    SandboxPlan plan = selection.backend().plan(spec);
    return RunViews.plan(json, spec, plan, selection.probe(), config.enabled(), configured);
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

  /** Starts a run and waits for it to end; returns its result. */
  public ObjectNode run(String actor, RunRequest request) throws InterruptedException {
    LiveRun run = launch(actor, request);
    try {
      run.done.get();
    } catch (ExecutionException e) {
      throw new RunException("running " + run.runId() + ": " + e.getCause().getMessage(), e);
    }
    return view(run.runId());
  }

  private LiveRun launch(String actor, RunRequest request) {
    SandboxConfig config = configs.sandbox();
    List<String> problems = new ArrayList<>();
    try {
      checkRequest(request);
    } catch (RunRefusedException e) {
      throw refuse(actor, request, e);
    }
    if (!config.enabled()) {
      throw refuse(
          actor,
          request,
          new RunRefusedException(
              Refusal.SANDBOXES_DISABLED,
              "running agent "
                  + request.agent()
                  + ": agent sandboxes are turned off (PUT the configuration with"
                  + " \"enabled\": true)",
              List.of()));
    }
    AgentSettings agent = config.agents().get(request.agent());
    if (agent == null) {
      throw refuse(
          actor,
          request,
          new RunRefusedException(
              Refusal.AGENT_NOT_LISTED,
              "running agent "
                  + request.agent()
                  + ": the agent has no sandbox configuration (add it under \"agents\")",
              List.of()));
    }
    problems.addAll(EnvScreen.problems(request.env()));
    if (!problems.isEmpty()) {
      throw refuse(
          actor,
          request,
          new RunRefusedException(
              Refusal.ENV_REFUSED,
              "running agent " + request.agent() + ": the environment is refused",
              problems));
    }
    if (live.size() >= settings.maxConcurrentRuns()) {
      throw refuse(
          actor,
          request,
          new RunRefusedException(
              Refusal.TOO_MANY_RUNS,
              "running agent "
                  + request.agent()
                  + ": "
                  + live.size()
                  + " runs are live, the most this control plane runs at once (try again later)",
              List.of()));
    }
    Selection selection;
    try {
      selection = selector.select(config.backend().wireName(), config.requireRuntimeClass());
    } catch (NoUsableBackendException e) {
      throw refuse(
          actor,
          request,
          new RunRefusedException(
              config.requireRuntimeClass()
                  ? Refusal.RUNTIME_CLASS_REQUIRED
                  : Refusal.BACKEND_UNAVAILABLE,
              "running agent " + request.agent() + ": " + e.getMessage(),
              e.attempts()));
    }
    Instant now = clock.instant();
    RunSpec spec = spec(RunIds.next(), request, agent, config);
    Redactor redactor = new Redactor(request.env().values());
    RunRecord record =
        new RunRecord(
            spec.runId(),
            spec.agent(),
            selection.backend().name(),
            selection.probe().runtime(),
            RunStatus.PENDING,
            RunViews.command(json, redactor, spec.command()),
            now,
            null,
            null,
            null,
            null,
            null,
            spec.expiresAt(),
            settings.instanceId());
    // The launch row is committed before anything is created (DESIGN invariant 10): a run the
    // audit log does not know about never starts.
    store.runs().insert(record);
    store
        .audit()
        .append(
            new AuditEvent(
                LAUNCH,
                actor,
                spec.agent(),
                spec.runId(),
                RunViews.launchData(json, spec, selection.probe(), record, redactor)));
    LiveRun run =
        new LiveRun(
            spec,
            actor,
            selection.backend(),
            selection.probe(),
            new RunOutput(redactor, settings.tailBytes()),
            new EgressRecorder(
                spec.runId(), spec.agent(), actor, store.audit(), json, settings.decisionsKept()),
            record);
    live.put(spec.runId(), run);
    executor.execute(() -> lifecycle.execute(run, clock.instant().plus(spec.ttl())));
    return run;
  }

  private RunSpec spec(
      String runId, RunRequest request, AgentSettings agent, SandboxConfig config) {
    ScopeRule rule = configs.egress().ruleFor(agent.scope());
    Duration ttl = Duration.ofSeconds(agent.ttlSeconds());
    return new RunSpec(
        runId,
        request.agent(),
        agent.image(),
        request.command(),
        request.env(),
        new RunEgress(agent.allow(), rule.allow(), operator.internalCidrs(), operator.hosts()),
        agent.resources(),
        ttl,
        clock.instant().plus(ttl).plus(REAP_GRACE),
        config.requireRuntimeClass());
  }

  private void checkRequest(RunRequest request) {
    List<String> problems = new ArrayList<>();
    if (request.command().isEmpty()) {
      problems.add("command: at least one argument is required");
    }
    if (request.command().size() > RunRequest.MAX_ARGUMENTS) {
      problems.add("command: at most " + RunRequest.MAX_ARGUMENTS + " arguments");
    }
    for (int i = 0; i < request.command().size(); i++) {
      String arg = request.command().get(i);
      if (arg.length() > RunRequest.MAX_ARGUMENT_LENGTH) {
        problems.add("command[" + i + "]: longer than " + RunRequest.MAX_ARGUMENT_LENGTH);
      }
      if (arg.indexOf('\0') >= 0) {
        problems.add("command[" + i + "]: holds a NUL character");
      }
    }
    if (!problems.isEmpty()) {
      throw new RunRefusedException(
          Refusal.INVALID_REQUEST, "the run request is invalid: " + problems.get(0), problems);
    }
  }

  private RunRefusedException refuse(String actor, RunRequest request, RunRefusedException e) {
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

  /**
   * Asks a live run to stop.
   *
   * @return false when the run had already ended
   * @throws RunNotFoundException when no run has the id
   */
  public boolean kill(String actor, String runId) {
    LiveRun run = live.get(runId);
    if (run == null) {
      if (RunIds.valid(runId) && store.runs().find(runId).isPresent()) {
        return false;
      }
      throw new RunNotFoundException(runId);
    }
    ObjectNode data = json.createObjectNode();
    data.put("requested_by", actor);
    store.audit().append(new AuditEvent(KILL, actor, run.spec.agent(), runId, data));
    return run.kill();
  }

  /** The run's state and, once it ended, its result. */
  public ObjectNode view(String runId) {
    Optional<LiveRun> known = memory(runId);
    if (known.isPresent()) {
      return RunViews.run(json, known.get());
    }
    RunRecord record =
        (RunIds.valid(runId) ? store.runs().find(runId) : Optional.<RunRecord>empty())
            .orElseThrow(() -> new RunNotFoundException(runId));
    return RunViews.stored(json, record, store.audit());
  }

  /**
   * The output of a run, for streaming: live while this control plane holds the run, else the
   * stored tail as output that has already ended.
   */
  public RunOutput output(String runId) {
    Optional<LiveRun> known = memory(runId);
    if (known.isPresent()) {
      return known.get().output;
    }
    RunRecord record =
        (RunIds.valid(runId) ? store.runs().find(runId) : Optional.<RunRecord>empty())
            .orElseThrow(() -> new RunNotFoundException(runId));
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
    if (live.containsKey(runId)) {
      return true;
    }
    if (!RunIds.valid(runId)) {
      return true;
    }
    return store
        .runs()
        .find(runId)
        .map(r -> r.status().active() && r.expiresAt().isAfter(clock.instant()))
        .orElse(true);
  }

  /** How many runs this control plane is running now. */
  public int liveCount() {
    return live.size();
  }

  /** The newest runs, newest first. */
  public List<RunRecord> recent(int limit) {
    return store.runs().recent(limit);
  }

  /**
   * Marks runs that a previous life of this control plane left live (or whose expiry passed) as
   * failed, each with an {@code agent_sandbox.failure} row; their resources are the reaper's.
   */
  public int recover() {
    return lifecycle.recover(settings.instanceId(), live.keySet());
  }

  /** Asks every live run to stop and waits up to {@code wait} for them to end. */
  public void shutdown(Duration wait) throws InterruptedException {
    List<LiveRun> running = new ArrayList<>(live.values());
    for (LiveRun run : running) {
      run.kill();
    }
    Instant deadline = clock.instant().plus(wait);
    for (LiveRun run : running) {
      Duration left = Duration.between(clock.instant(), deadline);
      if (left.isNegative()) {
        break;
      }
      try {
        run.done.get(left.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
      } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
        // What did not end in time is recovered and reaped at the next start.
      }
    }
  }

  private Optional<LiveRun> memory(String runId) {
    LiveRun run = live.get(runId);
    if (run == null) {
      synchronized (finished) {
        run = finished.get(runId);
      }
    }
    return Optional.ofNullable(run);
  }

  private void retire(LiveRun run) {
    synchronized (finished) {
      finished.put(run.runId(), run);
    }
    live.remove(run.runId());
  }

  /** A plain map view of where each live run is, for metrics and health. */
  public Map<String, String> liveRuns() {
    Map<String, String> out = new LinkedHashMap<>();
    live.forEach((id, run) -> out.put(id, run.record().status().wireName()));
    return out;
  }
}
