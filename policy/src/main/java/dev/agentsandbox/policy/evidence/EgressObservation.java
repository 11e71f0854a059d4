package dev.agentsandbox.policy.evidence;

import java.time.Instant;
import java.util.Objects;

/**
 * What the audit log recorded of one agent's egress, tallied: {@code count} decisions of one kind
 * for one host, port and reason in one run, between {@code first} and {@code last}. Built from
 * {@code agent_sandbox.egress.*} rows, whose fields are untrusted text (the proxy runs beside the
 * workload): nothing here is assumed canonical or known.
 *
 * @param kind a refusal or an allowed connection (the first to each host in each run)
 * @param host the host as recorded, possibly not a host name at all
 * @param port the port as recorded, 0 when none was
 * @param reason the reason's wire name as recorded, possibly one this version does not know
 * @param runId the run, or null for a row of no run
 * @param count how many decisions (an aggregated row counts as its count), at least 1
 * @param first when the earliest was recorded
 * @param last when the latest was recorded
 */
public record EgressObservation(
    Kind kind,
    String host,
    int port,
    String reason,
    String runId,
    long count,
    Instant first,
    Instant last) {

  /** Which decision the rows recorded. */
  public enum Kind {
    /** {@code agent_sandbox.egress.allow}: the first allowed connection to a host in a run. */
    ALLOW,
    /** {@code agent_sandbox.egress.deny}: a refusal. */
    DENY
  }

  public EgressObservation {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(first, "first");
    Objects.requireNonNull(last, "last");
    if (count < 1) {
      throw new IllegalArgumentException("count must be at least 1, got " + count);
    }
    if (last.isBefore(first)) {
      throw new IllegalArgumentException("last is before first");
    }
  }
}
