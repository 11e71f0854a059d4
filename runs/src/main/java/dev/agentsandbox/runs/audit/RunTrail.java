package dev.agentsandbox.runs.audit;

import dev.agentsandbox.policy.event.RunEvent;
import dev.agentsandbox.store.AuditEvent;
import dev.agentsandbox.store.AuditLog;
import dev.agentsandbox.store.AuditRow;
import java.util.Objects;

/**
 * Writes a run's events to the audit log, each as its own row type with its own data: the only
 * place a run's audit row is built. Each append is committed (and, on SQLite, fsynced) before it
 * returns. Thread-safe.
 */
public final class RunTrail {
  private final AuditLog audit;

  public RunTrail(AuditLog audit) {
    this.audit = Objects.requireNonNull(audit, "audit");
  }

  /**
   * Appends {@code event} as {@code actor} did it, for {@code agent} and {@code runId} (either may
   * be null: a refusal belongs to no run, the reaper may not know the agent).
   */
  public AuditRow append(String actor, String agent, String runId, RunEvent event) {
    return audit.append(
        new AuditEvent(
            event.type().wireName(), actor, agent, runId, PlainJson.node(event.toTree())));
  }
}
