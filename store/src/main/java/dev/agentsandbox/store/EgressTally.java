package dev.agentsandbox.store;

import java.time.Instant;
import java.util.Objects;

/**
 * Egress decisions of one agent, one kind, host, port and reason in one run, from the egress index:
 * {@code count} decisions between {@code first} and {@code last}. {@link EgressIndex#scan} answers
 * one per row (an aggregated row with its count; {@code first} and {@code last} its time). Fields
 * are as the rows recorded them, bounded (docs/store.md).
 *
 * @param agent the agent
 * @param decision {@code allow} or {@code deny}
 * @param host the host, or empty when the row's was not a bounded printable name
 * @param port the port, or 0
 * @param reason the reason's wire name, or empty
 * @param runId the run, or null
 * @param count decisions, at least 1
 * @param first the earliest row's time
 * @param last the latest row's time
 */
public record EgressTally(
    String agent,
    String decision,
    String host,
    int port,
    String reason,
    String runId,
    long count,
    Instant first,
    Instant last) {
  public EgressTally {
    Objects.requireNonNull(decision, "decision");
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(first, "first");
    Objects.requireNonNull(last, "last");
  }
}
