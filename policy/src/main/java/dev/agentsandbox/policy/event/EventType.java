package dev.agentsandbox.policy.event;

import java.util.Optional;

/**
 * Every kind of row a run writes to the audit log, by its row type. The wire names are a contract
 * (docs/api.md): existing chains hold them, queries filter by their prefixes.
 */
public enum EventType {
  /** The run was admitted; written before the backend creates anything. */
  LAUNCH("agent_sandbox.launch"),
  /** The request was refused; nothing was created (a row of no run). */
  REFUSED("agent_sandbox.refused"),
  /** The run's credentials were minted: names, sources and expiries, never values. */
  CREDENTIALS_ISSUE("agent_sandbox.credentials.issue"),
  /** The run's credentials were revoked, or why one could not be. */
  CREDENTIALS_REVOKE("agent_sandbox.credentials.revoke"),
  /** The backend created the sandbox and started the workload. */
  STARTED("agent_sandbox.started"),
  /** The first allowed connection to a host. */
  EGRESS_ALLOW("agent_sandbox.egress.allow"),
  /** One refused connection attempt, in full. */
  EGRESS_DENY("agent_sandbox.egress.deny"),
  /** Refused attempts past the run's limits for rows in full, counted over an interval. */
  EGRESS_DENY_COUNTED("agent_sandbox.egress.deny.counted"),
  /** Someone asked for the run to be killed. */
  KILL("agent_sandbox.kill"),
  /** The deadline ended the run. */
  TIMEOUT("agent_sandbox.timeout"),
  /** The launch, the run or the control plane failed. */
  FAILURE("agent_sandbox.failure"),
  /** The sandbox was not under the isolation it was launched for. */
  RUNTIME_MISMATCH("agent_sandbox.runtime_mismatch"),
  /** The run's proxy stopped under a running workload. */
  PROXY_DIED("agent_sandbox.proxy_died"),
  /** What was kept of {@code /workspace/out}, or why nothing was. */
  ARTIFACTS("agent_sandbox.artifacts"),
  /** The run's artifacts were deleted under the retention. */
  ARTIFACTS_EXPIRED("agent_sandbox.artifacts.expired"),
  /** The sandbox was removed (by the run, or by the reaper). */
  TEARDOWN("agent_sandbox.teardown"),
  /** A session's step is about to start. */
  EXEC_START("agent_sandbox.exec.start"),
  /** A session's step ended. */
  EXEC("agent_sandbox.exec"),
  /** A file put into or taken out of a session's workspace. */
  FILES("agent_sandbox.files"),
  /** Someone asked for one step of a session to be killed. */
  STEP_KILL("agent_sandbox.step.kill"),
  /** A session's step was refused before it got a number. */
  EXEC_REFUSED("agent_sandbox.exec.refused"),
  /** Someone asked for a session to be closed. */
  CLOSE("agent_sandbox.close"),
  /** A session's idle time ran out. */
  IDLE("agent_sandbox.idle");

  /** The namespace of every audit row type. */
  public static final String NAMESPACE = "agent_sandbox.";

  /** The prefix the egress rows share, for queries: {@code .allow}, {@code .deny} and more. */
  public static final String EGRESS = "agent_sandbox.egress";

  private final String wireName;

  EventType(String wireName) {
    this.wireName = wireName;
  }

  /** The audit row type, such as {@code agent_sandbox.launch}. */
  public String wireName() {
    return wireName;
  }

  /** The type whose row type is {@code wireName}; empty for rows that are not run events. */
  public static Optional<EventType> fromWireName(String wireName) {
    for (EventType type : values()) {
      if (type.wireName.equals(wireName)) {
        return Optional.of(type);
      }
    }
    return Optional.empty();
  }

  @Override
  public String toString() {
    return wireName;
  }
}
