package dev.agentsandbox.runs;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.backend.BackendSelector;
import dev.agentsandbox.policy.config.AgentGrant;
import dev.agentsandbox.runs.audit.RunTimeline;
import dev.agentsandbox.store.RunKind;
import dev.agentsandbox.store.RunRecord;
import dev.agentsandbox.store.RunStatus;
import dev.agentsandbox.store.Store;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;

/**
 * The runs of this control plane: admits or refuses each request ({@link RunAdmission}, every
 * refusal audited), launches what is admitted ({@link RunLauncher}, which writes the launch row
 * before anything is created) and follows it ({@link RunLifecycle}); answers for live and stored
 * runs. Thread-safe.
 */
public final class RunService {
  private final RunParts parts;

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
    this.parts =
        RunParts.compose(
            configs, selector, store, operator, settings, clock, executor, json, contract);
  }

  /** The parts this façade delegates to, for the package's tests that look inside a run. */
  RunParts parts() {
    return parts;
  }

  /** The sessions of this control plane: runs whose steps and files come one at a time. */
  public Sessions sessions() {
    return parts.sessions();
  }

  /**
   * What a run of this request would create, creating nothing; see {@link RunAdmission#plan}.
   *
   * @param grant the agents the caller's token may use: another agent's plan is refused as if the
   *     agent were not listed
   */
  public PlanView plan(RunRequest request, AgentGrant grant) {
    return parts.admission().plan(request, grant).view();
  }

  /**
   * Starts a run and returns at once with its id; the run goes on on the service's executor.
   *
   * @param actor who asks: the token's name, on every row of the run
   * @param grant the agents the token may use: another agent is refused exactly as one that is not
   *     listed (and audited so, with the token's agents)
   * @throws RunRefusedException when the run must not happen; an {@code agent_sandbox.refused} row
   *     has been written
   */
  public String start(String actor, AgentGrant grant, RunRequest request) {
    return parts.launcher().admitAndLaunch(actor, grant, request).runId();
  }

  /**
   * Starts a run and waits for its result (exit status, outputs collected, rows written); the
   * sandbox is removed after this returns, and its {@code agent_sandbox.teardown} row follows.
   */
  public RunView run(String actor, AgentGrant grant, RunRequest request)
      throws InterruptedException {
    LiveRun run = parts.launcher().admitAndLaunch(actor, grant, request);
    run.awaitResult();
    return view(run.runId());
  }

  /** Asks a live run to stop; false when it had already ended, RunNotFoundException if none. */
  public boolean kill(String actor, String runId) {
    return parts.answers().kill(actor, runId);
  }

  /**
   * The agent whose run {@code runId} is, while this control plane holds it or its store has it;
   * empty for an id no run has. Every endpoint of a run asks it before anything else, for the
   * token's agents (docs/architecture.md invariant 13).
   */
  public Optional<String> agentOf(String runId) {
    return parts.answers().agentOf(runId);
  }

  /** The run's state and, once it ended, its result. */
  public RunView view(String runId) {
    return parts.answers().view(runId);
  }

  /**
   * The output of a run, for streaming: live while this control plane holds the run, else the
   * stored tail as output that has already ended.
   */
  public RunOutput output(String runId) {
    return parts.answers().output(runId);
  }

  /** The run's timeline from the audit log alone (docs/runs.md, "The timeline"). */
  public RunTimeline timeline(String runId) {
    return parts.answers().timeline(runId);
  }

  /**
   * Whether the reaper must spare the run's resources now: it is live here, live on another replica
   * sharing this store, or unknown to this store. An unknown run belongs to another control plane
   * on the same daemon or cluster, or to a store that was replaced; its resources go when their
   * expiry label passes, never earlier, so control planes do not reap each other.
   */
  public boolean isLive(String runId) {
    return parts.answers().isLive(runId);
  }

  /**
   * How many run slots are taken now: live runs, and warm sandboxes (ready or being prepared),
   * which count against the same limit.
   */
  public int liveCount() {
    return parts.slots().taken();
  }

  /**
   * The newest runs matching every given filter (null or empty: any; a null {@code kind}: both
   * kinds), newest first, among the runs of the agents {@code grant} permits only; {@code labels}
   * keeps the runs that carry every one.
   */
  public List<RunRecord> recent(
      AgentGrant grant,
      String agent,
      RunStatus status,
      RunKind kind,
      Instant since,
      Map<String, String> labels,
      int limit) {
    return parts.answers().recent(grant, agent, status, kind, since, labels, limit);
  }

  /**
   * Marks runs that a previous life of this control plane left live (or whose expiry passed) as
   * failed, each with an {@code agent_sandbox.failure} row; their resources are the reaper's.
   */
  public int recover() {
    return parts.recovery().recover(parts.settings().instanceId(), parts.live().liveIds());
  }

  /**
   * Revokes the run tokens still valid of runs that are over (a revocation that failed, a crash
   * before one), each recorded as its run's {@code agent_sandbox.credentials.revoke} row; the
   * control plane calls it on every reaper pass. Returns how many it revoked.
   */
  public int sweepRunTokens() {
    return parts.recovery().sweepRunTokens(this::isLive);
  }

  /**
   * Removes every warm sandbox (waiting for those being prepared), then asks every live run to stop
   * and waits up to {@code wait} for them to end and be removed (runs whose result is recorded but
   * whose sandbox is still being removed included).
   */
  public void shutdown(Duration wait) throws InterruptedException {
    parts.pool().shutdown(wait);
    parts.live().stopAll(wait, parts.clock());
  }

  /**
   * One pass of the warm pool's upkeep: drains warm sandboxes the configuration no longer matches
   * or that idled too long, and prepares what each agent's {@code warm} asks for as far as free run
   * slots allow. The control plane calls it periodically.
   */
  public void maintainWarmPool() {
    parts.pool().refill();
  }

  /** Per agent, warm sandboxes ready and being prepared: {@code {agent: {state: count}}}. */
  public Map<String, Map<String, Integer>> warmSandboxes() {
    return parts.pool().countsByState();
  }

  /** How many warm sandboxes left the pool since start, by outcome (handed_over, drained, ...). */
  public Map<String, Long> warmOutcomes() {
    return parts.pool().outcomes();
  }

  /** A plain map view of where each live run is, for metrics and health. */
  public Map<String, String> liveRuns() {
    return parts.live().statuses();
  }
}
