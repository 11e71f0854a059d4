package dev.agentsandbox.runs;

import dev.agentsandbox.backend.BackendSelector;
import dev.agentsandbox.backend.BackendSelector.Selection;
import dev.agentsandbox.backend.NoUsableBackendException;
import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.SandboxBackend;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.AgentGrant;
import dev.agentsandbox.policy.config.AgentSettings;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.RunEgress;
import dev.agentsandbox.policy.config.SandboxConfig;
import dev.agentsandbox.policy.config.ScopeRule;
import dev.agentsandbox.policy.run.EnvScreen;
import dev.agentsandbox.policy.run.RunLabels;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Decides whether a request may run, creating nothing: the request's shape, whether sandboxes are
 * on, the agent's configuration, the environment screen, a run slot, and the backend (chosen once;
 * a named backend is never replaced by a weaker one). The configuration is read once per decision.
 * Thread-safe.
 */
final class RunAdmission {
  /** How long after its deadline a run's leftovers become fair game for the reaper. */
  static final Duration REAP_GRACE = Duration.ofMinutes(5);

  private final ConfigSource configs;
  private final BackendSelector selector;
  private final OperatorEgress operator;
  private final CredentialMinter minter;
  private final Clock clock;

  RunAdmission(
      ConfigSource configs,
      BackendSelector selector,
      OperatorEgress operator,
      CredentialMinter minter,
      Clock clock) {
    this.configs = configs;
    this.selector = selector;
    this.operator = operator;
    this.minter = minter;
    this.clock = clock;
  }

  /** What {@link #plan} found: the spec, the backend, and whether the run could start now. */
  /** What a plan holds in place of a credential's value. */
  static final String NOT_MINTED = "<minted at launch>";

  record Planned(RunSpec spec, Selection selection, boolean enabled, boolean configured) {
    /** What the run would create, as its backend plans it, with what admission found. */
    PlanView view() {
      return RunViews.plan(
          spec,
          selection.backend().plan(spec),
          selection.probe(),
          selection.stillProbing(),
          enabled,
          configured);
    }
  }

  /**
   * The command a session's spec carries: backends do not run it ({@link
   * dev.agentsandbox.backend.SandboxBackend#openSession}), and no step can be it.
   */
  static final List<String> SESSION_COMMAND = List.of("<session>");

  /**
   * What a session asks for beyond a run.
   *
   * @param idleSeconds its idle time; empty for the default
   */
  record SessionAsk(java.util.OptionalInt idleSeconds) {}

  /**
   * A one-shot run's admission; see {@link #admit(RunRequest, AgentGrant, RunSlots, WarmPool,
   * Optional)}.
   */
  Admission admit(RunRequest request, AgentGrant grant, RunSlots slots, WarmPool pool) {
    return admit(request, grant, slots, pool, Optional.empty());
  }

  /**
   * Every check a launch must pass; a slot is taken only when the run is admitted. A run whose
   * agent has a warm sandbox prepared exactly as this run would be gets that sandbox (and its slot)
   * instead of a new one.
   */
  Admission admit(
      RunRequest request,
      AgentGrant grant,
      RunSlots slots,
      WarmPool pool,
      Optional<SessionAsk> session) {
    SandboxConfig config = configs.sandbox();
    String running =
        (session.isPresent() ? "opening a session of agent " : "running agent ")
            + request.agent()
            + ": ";
    Optional<RunRefusedException> invalid = invalid(request);
    if (invalid.isPresent()) {
      return new Admission.Refused(invalid.get());
    }
    if (!config.enabled()) {
      return refused(
          Refusal.SANDBOXES_DISABLED,
          running + "agent sandboxes are turned off (PUT the configuration with \"enabled\": true)",
          List.of());
    }
    // An agent the caller's token may not use is answered exactly as one that is not listed
    // (docs/architecture.md invariant 13): the token learns nothing of the other agents.
    AgentSettings agent =
        grant.permits(request.agent()) ? config.agents().get(request.agent()) : null;
    if (agent == null) {
      return refused(Refusal.AGENT_NOT_LISTED, notListed(running), List.of());
    }
    List<String> envProblems = EnvScreen.problems(request.env());
    if (!envProblems.isEmpty()) {
      return refused(Refusal.ENV_REFUSED, running + "the environment is refused", envProblems);
    }
    java.util.OptionalInt idle = java.util.OptionalInt.empty();
    if (session.isPresent()) {
      int asked =
          session
              .get()
              .idleSeconds()
              .orElse(
                  Math.min(
                      dev.agentsandbox.runs.session.SessionRequest.DEFAULT_IDLE_SECONDS,
                      agent.ttlSeconds()));
      if (asked < 1 || asked > agent.ttlSeconds()) {
        String problem =
            "idle_seconds: must be from 1 to the agent's ttl_seconds ("
                + agent.ttlSeconds()
                + "), not "
                + asked;
        return refused(Refusal.INVALID_REQUEST, running + problem, List.of(problem));
      }
      idle = java.util.OptionalInt.of(asked);
    }
    List<String> credentialProblems = minter.problems(agent.credentials());
    if (!credentialProblems.isEmpty()) {
      return refused(
          Refusal.CREDENTIALS_UNAVAILABLE,
          running + "its credentials cannot be minted here: " + credentialProblems.get(0),
          credentialProblems);
    }
    // Docker labels cannot be added after creation, and a run's labels go on every object it has
    // (docs/runs.md): a labelled run gets a sandbox of its own.
    if (request.labels().isEmpty() && pool.hasReady(request.agent())) {
      Optional<Admission> warm = warm(request, agent, config, pool, idle);
      if (warm.isPresent()) {
        return warm.get();
      }
    }
    Optional<RunSlots.Slot> slot = slots.tryTake();
    if (slot.isEmpty()) {
      return refused(
          Refusal.TOO_MANY_RUNS,
          running
              + slots.taken()
              + " runs are live, the most this control plane runs at once (try again later)",
          List.of());
    }
    Selection selection;
    try {
      selection = selector.select(config.backend().wireName(), config.requireRuntimeClass());
    } catch (NoUsableBackendException e) {
      slot.get().release();
      return refused(noBackend(config), running + e.getMessage(), e.attempts());
    }
    if (session.isPresent() && !selection.backend().opensSessions()) {
      slot.get().release();
      return refused(
          Refusal.BACKEND_UNAVAILABLE,
          running
              + "the "
              + selection.backend().name()
              + " backend does not take sessions' steps yet (docs/runs.md says which backends do)",
          List.of(selection.backend().name() + ": does not open sessions"));
    }
    if (!agent.credentials().isEmpty() && !selection.backend().deliversCredentials()) {
      // Minting a credential the workload never receives would be a silent failure.
      slot.get().release();
      return refused(
          Refusal.CREDENTIALS_UNAVAILABLE,
          running
              + "the "
              + selection.backend().name()
              + " backend cannot deliver credentials into its sandboxes yet (docs/runs.md)",
          List.of("credentials: " + String.join(", ", agent.credentials().keySet())));
    }
    List<String> services =
        agent.internal().values().stream()
            .filter(destination -> destination.service().isPresent())
            .map(destination -> destination.name())
            .toList();
    if (!services.isEmpty() && !selection.backend().reachesClusterServices()) {
      // On Docker or a microVM nothing would hold the proxy to the service's pods.
      slot.get().release();
      return refused(
          Refusal.BACKEND_UNAVAILABLE,
          running
              + "its internal destinations "
              + String.join(", ", services)
              + " are cluster services, which the "
              + selection.backend().name()
              + " backend cannot fence (use the k8s backend, or declare a cidr)",
          List.of("internal: " + String.join(", ", services)));
    }
    return new Admission.Admitted(
        spec(RunIds.next(), request, agent, config),
        selection,
        slot.get(),
        agent,
        Optional.empty(),
        idle);
  }

  /** The message of an agent that is not listed, or that the caller's token may not use. */
  private static String notListed(String action) {
    return action + "the agent has no sandbox configuration (add it under \"agents\")";
  }

  /**
   * The run in a warm sandbox, when one of its agent was prepared with exactly the image, policy,
   * resources, ttl and backend this run gets under the configuration read for this decision; empty
   * (a sandbox of its own, after every usual check) otherwise.
   */
  private Optional<Admission> warm(
      RunRequest request,
      AgentSettings agent,
      SandboxConfig config,
      WarmPool pool,
      java.util.OptionalInt idle) {
    Selection selection;
    try {
      selection = selector.select(config.backend().wireName(), config.requireRuntimeClass());
    } catch (NoUsableBackendException e) {
      return Optional.empty();
    }
    if (!agent.credentials().isEmpty() && !selection.backend().deliversCredentials()) {
      return Optional.empty();
    }
    if (idle.isPresent() && !selection.backend().opensSessions()) {
      return Optional.empty();
    }
    RunSpec wanted = spec(RunIds.next(), request, agent, config);
    Optional<WarmPool.Warm> warm = pool.take(WarmPool.Key.of(wanted, selection.backend().name()));
    if (warm.isEmpty()) {
      return Optional.empty();
    }
    RunSpec spec =
        spec(warm.get().sandbox().runId(), warm.get().expiresAt(), request, agent, config);
    return Optional.of(
        new Admission.Admitted(spec, selection, warm.get().slot(), agent, warm, idle));
  }

  /**
   * The spec a warm sandbox of {@code agentName} is prepared from: what a run of it gets under
   * {@code config}, with a placeholder command and no environment, labels or credentials (those
   * come at hand-over).
   */
  RunSpec template(
      String runId, String agentName, AgentSettings agent, SandboxConfig config, Instant expires) {
    return spec(
        runId,
        expires,
        new RunRequest(agentName, List.of("<handed over>"), java.util.Map.of()),
        agent,
        config);
  }

  /**
   * What a run of this request would create. Works before sandboxes are enabled and for agents not
   * yet configured (with the defaults they would get), so a reviewer can read the manifests before
   * turning anything on.
   *
   * @throws RunRefusedException when the request is malformed or no backend can be planned
   */
  Planned plan(RunRequest request, AgentGrant grant) {
    Optional<RunRefusedException> invalid = invalid(request);
    if (invalid.isPresent()) {
      throw invalid.get();
    }
    if (!grant.permits(request.agent())) {
      // Planned with the defaults, an agent that is not listed shows nothing of anyone's settings;
      // for a token limited to other agents it is still not its agent, configured or not.
      throw new RunRefusedException(
          Refusal.AGENT_NOT_LISTED,
          notListed("planning a run of agent " + request.agent() + ": "),
          List.of());
    }
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
    String wanted = config.backend().wireName();
    Optional<SandboxBackend> named =
        wanted.equals(BackendSelector.AUTO) ? Optional.empty() : selector.named(wanted);
    Selection selection;
    if (named.isPresent()) {
      // A named backend is planned even where it cannot run now: reviewing the manifests for a
      // cluster before pointing the control plane at it is the point of plan. The probe says so.
      selection = new Selection(named.get(), selector.probeNamed(named.get()));
    } else {
      try {
        selection = selector.select(wanted, config.requireRuntimeClass());
      } catch (NoUsableBackendException e) {
        throw new RunRefusedException(
            noBackend(config),
            "planning a run of agent " + request.agent() + ": " + e.getMessage(),
            e.attempts());
      }
    }
    RunSpec spec = spec(RunIds.next(), request, agent, config);
    return new Planned(
        spec.withCredentials(planned(agent, spec)), selection, config.enabled(), configured);
  }

  /**
   * The agent's credentials as a plan shows them: named, with their variables, and with {@link
   * #NOT_MINTED} for a value, since a plan mints nothing (no token, no signature, no command). So a
   * plan shows how each credential would be delivered (a Secret's keys, a volume's files) and never
   * a value.
   */
  private List<RunCredential> planned(AgentSettings agent, RunSpec spec) {
    java.time.Instant deadline = clock.instant().plus(spec.ttl());
    return agent.credentials().values().stream()
        .map(c -> new RunCredential(c.name(), NOT_MINTED, c.env(), deadline))
        .toList();
  }

  private RunSpec spec(
      String runId, RunRequest request, AgentSettings agent, SandboxConfig config) {
    Duration ttl = Duration.ofSeconds(agent.ttlSeconds());
    return spec(runId, clock.instant().plus(ttl).plus(REAP_GRACE), request, agent, config);
  }

  private RunSpec spec(
      String runId,
      Instant expiresAt,
      RunRequest request,
      AgentSettings agent,
      SandboxConfig config) {
    ScopeRule rule = configs.egress().ruleFor(agent.scope());
    Duration ttl = Duration.ofSeconds(agent.ttlSeconds());
    return new RunSpec(
        runId,
        request.agent(),
        agent.image(),
        request.command(),
        request.env(),
        new RunEgress(
            agent.allow(),
            rule.allow(),
            List.copyOf(agent.internal().values()),
            operator.hosts(),
            List.copyOf(agent.inspect().values()),
            operator.upstreamCa()),
        agent.resources(),
        ttl,
        expiresAt,
        config.requireRuntimeClass(),
        request.labels(),
        List.of(),
        agent.outputs());
  }

  private static Refusal noBackend(SandboxConfig config) {
    return config.requireRuntimeClass()
        ? Refusal.RUNTIME_CLASS_REQUIRED
        : Refusal.BACKEND_UNAVAILABLE;
  }

  private static Admission refused(Refusal refusal, String message, List<String> problems) {
    return new Admission.Refused(new RunRefusedException(refusal, message, problems));
  }

  private static Optional<RunRefusedException> invalid(RunRequest request) {
    List<String> problems = new ArrayList<>(RunLabels.problems(request.labels()));
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
    if (problems.isEmpty()) {
      return Optional.empty();
    }
    return Optional.of(
        new RunRefusedException(
            Refusal.INVALID_REQUEST, "the run request is invalid: " + problems.get(0), problems));
  }
}
