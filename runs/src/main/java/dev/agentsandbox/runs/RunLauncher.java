package dev.agentsandbox.runs;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.credentials.IssuedCredential;
import dev.agentsandbox.credentials.RunIdentity;
import dev.agentsandbox.credentials.UnableToIssueCredentialException;
import dev.agentsandbox.policy.config.AgentGrant;
import dev.agentsandbox.policy.config.CredentialSpec;
import dev.agentsandbox.policy.run.Redactor;
import dev.agentsandbox.store.AuditEvent;
import dev.agentsandbox.store.RunRecord;
import dev.agentsandbox.store.RunStatus;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.store.UnableToAccessStoreException;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;

/**
 * Turns an admitted run into a live one: writes the run's row and its {@code agent_sandbox.launch}
 * audit row before anything is created, then hands the run to {@link RunLifecycle} on the executor.
 * Also writes the {@code agent_sandbox.refused} row of a refused request. Thread-safe.
 */
final class RunLauncher {
  static final String LAUNCH = "agent_sandbox.launch";
  static final String REFUSED = "agent_sandbox.refused";
  static final String CREDENTIALS_ISSUE = "agent_sandbox.credentials.issue";

  private final Store store;
  private final RunSettings settings;
  private final Clock clock;
  private final ExecutorService executor;
  private final ObjectMapper json;
  private final RunLifecycle lifecycle;
  private final CredentialMinter minter;

  RunLauncher(
      Store store,
      RunSettings settings,
      Clock clock,
      ExecutorService executor,
      ObjectMapper json,
      RunLifecycle lifecycle,
      CredentialMinter minter) {
    this.minter = minter;
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
  LiveRun launch(
      String actor,
      AgentGrant grant,
      RunRequest request,
      Admission.Admitted admitted,
      LiveRuns live) {
    RunSpec spec = admitted.spec();
    Instant deadline = clock.instant().plus(spec.ttl());
    List<IssuedCredential> minted;
    try {
      // Minted before the run exists in the store: a credential that cannot be had refuses the
      // run, like any other admission check, with nothing created.
      minted =
          minter.mint(
              admitted.agent().credentials(),
              new RunIdentity(spec.runId(), spec.agent(), spec.runLabels(), deadline));
    } catch (UnableToIssueCredentialException | UnableToAccessStoreException e) {
      abandon(admitted);
      throw refuse(
          actor,
          grant,
          request,
          new RunRefusedException(
              Refusal.CREDENTIAL_REFUSED,
              "running agent " + spec.agent() + ": " + e.getMessage(),
              List.of(e.getMessage())));
    }
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
              command(redactor, spec.command()),
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
      store.runs().insert(record, spec.runLabels());
      store
          .audit()
          .append(
              new AuditEvent(
                  LAUNCH,
                  actor,
                  spec.agent(),
                  spec.runId(),
                  launchData(spec, admitted, record, redactor)));
      if (!minted.isEmpty()) {
        store
            .audit()
            .append(
                new AuditEvent(
                    CREDENTIALS_ISSUE,
                    actor,
                    spec.agent(),
                    spec.runId(),
                    credentialsData(admitted, minted)));
      }
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
              admitted.slot(),
              admitted.agent().outputs(),
              admitted.warm().map(WarmPool.Warm::sandbox));
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
      minter.revoke(spec.runId());
      abandon(admitted);
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

  /** The {@code agent_sandbox.credentials.issue} row: names, sources and expiries, never values. */
  private ObjectNode credentialsData(Admission.Admitted admitted, List<IssuedCredential> minted) {
    ObjectNode data = json.createObjectNode();
    ArrayNode list = data.putArray("credentials");
    for (IssuedCredential c : minted) {
      CredentialSpec spec = admitted.agent().credentials().get(c.name());
      ObjectNode row = list.addObject();
      row.put("name", c.name());
      row.put("source", c.source());
      spec.audience().ifPresent(a -> row.put("audience", a));
      spec.command().ifPresent(a -> row.put("command", a));
      spec.env().ifPresent(a -> row.put("env", a));
      row.put("expires_at", c.expiresAt().toString());
    }
    return data;
  }

  /**
   * Audits the refusal and returns it, for the caller to throw. A token limited to agents has them
   * on the row ({@code token_agents}), so that a reviewer sees why its run of another agent was
   * refused as not listed.
   */
  RunRefusedException refuse(
      String actor, AgentGrant grant, RunRequest request, RunRefusedException e) {
    ObjectNode data = json.createObjectNode();
    data.put("reason", e.refusal().code());
    data.put("message", e.getMessage());
    if (grant.limited()) {
      ArrayNode agents = data.putArray("token_agents");
      grant.named().forEach(agents::add);
    }
    ArrayNode problems = data.putArray("problems");
    e.problems().forEach(problems::add);
    ArrayNode keys = data.putArray("env_keys");
    request.env().keySet().stream().sorted().forEach(keys::add);
    data.set("command", command(new Redactor(request.env().values()), request.command()));
    store.audit().append(new AuditEvent(REFUSED, actor, request.agent(), null, data));
    return e;
  }

  /**
   * The {@code agent_sandbox.launch} row's data: what was launched, where, and under which caps.
   */
  private ObjectNode launchData(
      RunSpec spec, Admission.Admitted admitted, RunRecord record, Redactor redactor) {
    Probe probe = admitted.selection().probe();
    ObjectNode data = json.createObjectNode();
    data.put("backend", record.backend());
    data.put("runtime", probe.runtime());
    data.put("isolation", probe.isolation().name().toLowerCase(Locale.ROOT));
    data.put("image", spec.image());
    data.set("command", command(redactor, spec.command()));
    ArrayNode envKeys = data.putArray("env_keys");
    spec.env().keySet().stream().sorted().forEach(envKeys::add);
    ArrayNode allow = data.putArray("effective_allow");
    spec.egress().effective().asStrings().forEach(allow::add);
    data.put("ttl_seconds", spec.ttl().toSeconds());
    ObjectNode resources = data.putObject("resources");
    resources.put("cpus", spec.resources().cpus());
    resources.put("memory_mb", spec.resources().memoryMb());
    resources.put("pids", spec.resources().pids());
    data.put("require_runtime_class", spec.requireRuntimeClass());
    data.put("expires_at", spec.expiresAt().toString());
    // Which runs used a warm sandbox, and how old its policy was when the run took it.
    data.put("warm", admitted.warm().isPresent());
    admitted.warm().ifPresent(w -> data.put("warm_prepared_at", w.preparedAt().toString()));
    return data;
  }

  /** The command as it may be stored and audited: secrets in arguments redacted. */
  private ArrayNode command(Redactor redactor, List<String> command) {
    ArrayNode out = json.createArrayNode();
    command.forEach(arg -> out.add(redactor.redact(arg)));
    return out;
  }
}
