package dev.agentsandbox.runs;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.credentials.IssuedCredential;
import dev.agentsandbox.credentials.RunIdentity;
import dev.agentsandbox.policy.config.AgentGrant;
import dev.agentsandbox.policy.config.CredentialSpec;
import dev.agentsandbox.policy.event.CredentialsIssued;
import dev.agentsandbox.policy.event.CredentialsRevoked;
import dev.agentsandbox.policy.event.Launched;
import dev.agentsandbox.policy.event.Refused;
import dev.agentsandbox.policy.event.Revocation;
import dev.agentsandbox.policy.run.Redactor;
import dev.agentsandbox.runs.audit.RunTrail;
import dev.agentsandbox.store.RunKind;
import dev.agentsandbox.store.RunRecord;
import dev.agentsandbox.store.RunStatus;
import dev.agentsandbox.store.Store;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.ExecutorService;

/**
 * Turns an admitted run into a live one: writes the run's row and its {@code agent_sandbox.launch}
 * audit row before anything is created, then hands the run to {@link RunLifecycle} on the executor.
 * Also writes the {@code agent_sandbox.refused} row of a refused request. Thread-safe.
 */
final class RunLauncher {
  private final Store store;
  private final RunTrail trail;
  private final RunSettings settings;
  private final Clock clock;
  private final ExecutorService executor;
  private final ObjectMapper json;
  private final RunLifecycle lifecycle;
  private final CredentialMinter minter;
  private final Admitting admitting;

  /**
   * What a request is admitted by and where an admitted run goes.
   *
   * @param admission decides each request
   * @param slots the run slots
   * @param pool the warm sandboxes an admission may take
   * @param live where a launched run is entered
   */
  record Admitting(RunAdmission admission, RunSlots slots, WarmPool pool, LiveRuns live) {}

  RunLauncher(
      Store store,
      RunSettings settings,
      Clock clock,
      ExecutorService executor,
      ObjectMapper json,
      RunLifecycle lifecycle,
      CredentialMinter minter,
      Admitting admitting) {
    this.minter = minter;
    this.admitting = admitting;
    this.store = store;
    this.settings = settings;
    this.clock = clock;
    this.executor = executor;
    this.json = json;
    this.lifecycle = lifecycle;
    this.trail = new RunTrail(store.audit());
  }

  /**
   * Admits or refuses the request (the refusal audited, then thrown) and launches what is admitted;
   * a run that took a warm sandbox has its replacement prepared on the executor.
   */
  LiveRun admitAndLaunch(String actor, AgentGrant grant, RunRequest request) {
    return switch (admitting
        .admission()
        .admit(request, grant, admitting.slots(), admitting.pool())) {
      case Admission.Refused refused -> throw refuse(actor, grant, request, refused.refusal());
      case Admission.Admitted admitted -> {
        if (admitted.warm().isPresent()) {
          executor.execute(admitting.pool()::refill); // prepare its replacement
        }
        yield launch(actor, grant, request, admitted, admitting.live());
      }
    };
  }

  /**
   * Launches the run, entered in {@code live} before its lifecycle starts. The slot is released
   * here if the run never reaches its lifecycle, else when the lifecycle retires it.
   */
  LiveRun launch(
      String actor,
      AgentGrant grant,
      RunRequest request,
      Admission.Admitted admitted,
      LiveRuns live) {
    RunSpec spec = admitted.spec();
    Instant deadline = clock.instant().plus(spec.ttl());
    RunIdentity identity = new RunIdentity(spec.runId(), spec.agent(), spec.runLabels(), deadline);
    List<IssuedCredential> minted;
    try {
      // Minted before the run exists in the store: a credential that cannot be had refuses the
      // run, like any other admission check, with nothing created.
      minted = minter.mint(admitted.agent().credentials(), identity);
    } catch (UnableToMintCredentialsException e) {
      abandon(admitted);
      // What was minted before the failure was revoked; the refusal row says what became of it.
      throw refuse(
          actor,
          grant,
          request,
          new RunRefusedException(
              Refusal.CREDENTIAL_REFUSED,
              "running agent " + spec.agent() + ": " + e.getMessage(),
              List.of(e.getMessage())),
          e.revocations(),
          admitted.session());
    }
    RunCredentials credentials =
        new RunCredentials(admitted.agent().credentials(), identity, minted);
    spec = spec.withCredentials(minted.stream().map(c -> delivered(admitted, c)).toList());
    try {
      List<String> secrets = new ArrayList<>(spec.env().values());
      minted.forEach(c -> secrets.add(c.value()));
      Redactor redactor = new Redactor(secrets);
      RunRecord record =
          new RunRecord(
              spec.runId(),
              spec.agent(),
              admitted.selection().backend().name(),
              admitted.selection().probe().runtime(),
              RunStatus.PENDING,
              admitted.session()
                  ? com.fasterxml.jackson.databind.node.NullNode.getInstance()
                  : commandNode(redactor, spec.command()),
              clock.instant(),
              null,
              null,
              null,
              null,
              null,
              spec.expiresAt(),
              settings.instanceId(),
              admitted.session() ? RunKind.SESSION : RunKind.RUN,
              admitted.session() ? admitted.idleSeconds().getAsInt() : null);
      // The launch row is committed before anything is created (docs/architecture.md invariant
      // 10): a run the audit log does not know about never starts.
      store.runs().insert(record, spec.runLabels());
      trail.append(actor, spec.agent(), spec.runId(), launched(spec, admitted, record, redactor));
      if (!minted.isEmpty()) {
        trail.append(actor, spec.agent(), spec.runId(), issued(admitted, minted));
      }
      LiveRun run =
          new LiveRun(
              spec,
              actor,
              admitted.selection().backend(),
              admitted.selection().probe(),
              new RunOutput(redactor, settings.tailBytes()),
              new EgressRecorder(
                  spec.runId(),
                  spec.agent(),
                  actor,
                  trail,
                  json,
                  settings.decisionsKept(),
                  EgressRecorder.Limits.DEFAULT,
                  clock),
              credentials,
              record,
              admitted.slot(),
              admitted.agent().outputs(),
              admitted.warm().map(WarmPool.Warm::sandbox),
              admitted.session()
                  ? Optional.of(
                      new LiveSession(
                          admitted.idleSeconds().getAsInt(),
                          admitted.agent().sessions(),
                          deadline,
                          secrets,
                          clock))
                  : Optional.empty());
      live.add(run);
      try {
        executor.execute(() -> lifecycle.execute(run, deadline));
      } catch (RuntimeException e) {
        live.remove(run);
        throw e;
      }
      return run;
    } catch (RuntimeException e) {
      // Nothing was created; a row already written stays pending and is recovered at next start.
      List<Revocation> revoked = minter.revoke(credentials.specs(), identity, minted);
      abandon(admitted);
      recordRevocation(actor, spec, revoked);
      throw e;
    }
  }

  /**
   * Gives back what an admitted run held when it never reaches its lifecycle: its slot, and its
   * warm sandbox, which no other run may have (removed off the caller's thread, slot given back
   * once it is gone).
   */
  private void abandon(Admission.Admitted admitted) {
    if (admitted.warm().isEmpty()) {
      admitted.slot().release();
      return;
    }
    Runnable discard =
        () -> {
          try {
            admitted.warm().get().sandbox().discard();
          } finally {
            admitted.slot().release();
          }
        };
    try {
      executor.execute(discard);
    } catch (RuntimeException e) {
      discard.run();
    }
  }

  private static RunCredential delivered(Admission.Admitted admitted, IssuedCredential c) {
    CredentialSpec spec = admitted.agent().credentials().get(c.name());
    return new RunCredential(c.name(), c.value(), spec.env(), c.expiresAt());
  }

  /** Best effort: the launch failed for a reason that may also stop this row. */
  private void recordRevocation(String actor, RunSpec spec, List<Revocation> revoked) {
    if (revoked.isEmpty()) {
      return;
    }
    try {
      trail.append(
          actor,
          spec.agent(),
          spec.runId(),
          new CredentialsRevoked(CredentialsRevoked.Stage.RUN, revoked));
    } catch (RuntimeException e) {
      org.slf4j.LoggerFactory.getLogger(RunLauncher.class)
          .warn(
              "run {}: recording its revoked credentials failed: {}", spec.runId(), e.getMessage());
    }
  }

  /** The {@code agent_sandbox.credentials.issue} row: names, sources and expiries, never values. */
  private static CredentialsIssued issued(
      Admission.Admitted admitted, List<IssuedCredential> minted) {
    return new CredentialsIssued(
        minted.stream()
            .map(
                c -> {
                  CredentialSpec spec = admitted.agent().credentials().get(c.name());
                  return new CredentialsIssued.Credential(
                      c.name(),
                      c.source(),
                      spec.audience(),
                      spec.command(),
                      spec.env(),
                      c.expiresAt());
                })
            .toList());
  }

  /** Audits the refusal and returns it, for the caller to throw. */
  RunRefusedException refuse(
      String actor, AgentGrant grant, RunRequest request, RunRefusedException e) {
    return refuse(actor, grant, request, e, List.of(), false);
  }

  /**
   * Audits the refusal of a session (its row's command is empty: a session's steps come later) and
   * returns it, for the caller to throw.
   */
  RunRefusedException refuseSession(
      String actor, AgentGrant grant, RunRequest request, RunRefusedException e) {
    return refuse(actor, grant, request, e, List.of(), true);
  }

  /**
   * Audits the refusal and returns it, for the caller to throw. A token limited to agents has them
   * on the row ({@code token_agents}), so that a reviewer sees why its run of another agent was
   * refused as not listed.
   */
  private RunRefusedException refuse(
      String actor,
      AgentGrant grant,
      RunRequest request,
      RunRefusedException e,
      List<Revocation> revocations,
      boolean session) {
    trail.append(
        actor,
        request.agent(),
        null,
        new Refused(
            e.refusal().code(),
            e.getMessage(),
            e.problems(),
            request.env().keySet().stream().sorted().toList(),
            session ? List.of() : command(new Redactor(request.env().values()), request.command()),
            revocations,
            List.copyOf(grant.named()),
            session));
    return e;
  }

  /** The {@code agent_sandbox.launch} row: what was launched, where, and under which caps. */
  private static Launched launched(
      RunSpec spec, Admission.Admitted admitted, RunRecord record, Redactor redactor) {
    Probe probe = admitted.selection().probe();
    return new Launched(
        record.backend(),
        probe.runtime(),
        probe.isolation().name().toLowerCase(Locale.ROOT),
        spec.image(),
        admitted.session() ? List.of() : command(redactor, spec.command()),
        spec.env().keySet().stream().sorted().toList(),
        spec.egress().effective().asStrings(),
        spec.ttl().toSeconds(),
        new Launched.Resources(
            spec.resources().cpus(), spec.resources().memoryMb(), spec.resources().pids()),
        spec.requireRuntimeClass(),
        spec.expiresAt(),
        // Which runs used a warm sandbox, and how old its policy was when the run took it.
        admitted.warm().isPresent(),
        admitted.warm().map(WarmPool.Warm::preparedAt),
        admitted.session()
            ? Optional.of((long) admitted.idleSeconds().getAsInt())
            : Optional.empty());
  }

  /** The command as it may be audited: secrets in arguments redacted. */
  private static List<String> command(Redactor redactor, List<String> command) {
    return command.stream().map(redactor::redact).toList();
  }

  /** The command as it may be stored in the run's row: secrets in arguments redacted. */
  private ArrayNode commandNode(Redactor redactor, List<String> command) {
    ArrayNode out = json.createArrayNode();
    command(redactor, command).forEach(out::add);
    return out;
  }
}
