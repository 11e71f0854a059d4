package dev.agentsandbox.runs;

import dev.agentsandbox.policy.event.CredentialsIssued;
import dev.agentsandbox.policy.event.CredentialsRevoked;
import dev.agentsandbox.policy.event.EventType;
import dev.agentsandbox.policy.event.Failed;
import dev.agentsandbox.policy.event.Revocation;
import dev.agentsandbox.runs.audit.RecordedEvent;
import dev.agentsandbox.runs.audit.RunTrail;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.RunRecord;
import dev.agentsandbox.store.RunStatus;
import dev.agentsandbox.store.Store;
import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;

/**
 * What a control plane does about runs it no longer follows: at start, marks those a previous life
 * left live as failed and revokes what they were given ({@link #recover}); on each reaper pass,
 * revokes run tokens still valid of runs that are over ({@link #sweepRunTokens}). Each is recorded
 * in the run's rows, what could not be revoked included. Thread-safe.
 */
final class RunRecovery {
  private final Store store;
  private final RunTrail trail;
  private final CredentialMinter minter;
  private final Clock clock;
  private final SessionLifecycle sessions;

  RunRecovery(
      Store store,
      RunTrail trail,
      CredentialMinter minter,
      Clock clock,
      SessionLifecycle sessions) {
    this.store = store;
    this.trail = trail;
    this.minter = minter;
    this.clock = clock;
    this.sessions = sessions;
  }

  /**
   * Marks runs this instance left live, or whose expiry passed, as failed, and revokes what they
   * were given as far as it can be after a restart (docs/runs.md, "Credentials").
   */
  int recover(String instanceId, Set<String> liveHere) {
    Instant now = clock.instant();
    int recovered = 0;
    for (RunRecord r : store.runs().active()) {
      if (liveHere.contains(r.runId())) {
        continue;
      }
      boolean mine = instanceId.equals(r.owner());
      if (!mine && r.expiresAt().isAfter(now)) {
        continue;
      }
      String why =
          mine
              ? "the control plane that owned the run stopped while the run was live"
              : "the run outlived its expiry without its control plane recording an end";
      trail.append("control-plane", r.agent(), r.runId(), new Failed(Failed.Stage.RECOVERY, why));
      if (r.isSession()) {
        // The steps it left running end with it, each with its exec row: its timeline is whole.
        sessions.recoverSteps(r, now, why);
      }
      store.runs().update(r.ended(RunStatus.FAILED, now, r.exitStatus(), "error", null));
      List<Revocation> revoked =
          minter.revokeLeftBehind(r.runId(), r.expiresAt(), issued(r.runId()));
      if (!revoked.isEmpty()) {
        trail.append(
            "control-plane",
            r.agent(),
            r.runId(),
            new CredentialsRevoked(CredentialsRevoked.Stage.RECOVERY, revoked));
      }
      recovered++;
    }
    return recovered;
  }

  /** The credentials a run was issued, from its {@code credentials.issue} row. */
  private Optional<CredentialsIssued> issued(String runId) {
    return store
        .audit()
        .query(new AuditQuery(EventType.CREDENTIALS_ISSUE.wireName(), null, runId, null, null, 10))
        .stream()
        .map(RecordedEvent::of)
        .flatMap(row -> row.as(CredentialsIssued.class).stream())
        .reduce((first, second) -> second);
  }

  /**
   * Revokes the run tokens still valid of runs {@code isLive} says are over (a revocation that
   * failed, a crash before one), each recorded as its run's {@code
   * agent_sandbox.credentials.revoke} row. Returns how many it revoked.
   */
  int sweepRunTokens(Predicate<String> isLive) {
    Map<String, Instant> revoked = minter.sweepRunTokens(isLive, clock.instant());
    revoked.forEach(
        (runId, expiresAt) ->
            trail.append(
                "reaper",
                store.runs().find(runId).map(RunRecord::agent).orElse(null),
                runId,
                new CredentialsRevoked(
                    CredentialsRevoked.Stage.SWEEP,
                    List.of(
                        new Revocation(
                            CredentialMinter.runTokenName(runId),
                            "run-token",
                            Revocation.Outcome.REVOKED,
                            expiresAt,
                            Optional.empty())))));
    return revoked.size();
  }
}
