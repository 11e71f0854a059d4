package dev.agentsandbox.store;

import java.time.Instant;
import java.util.Map;

/**
 * Filters for reading the audit log; null fields (and empty {@code labels}) do not filter; {@code
 * labels} keeps the rows of runs that carry every one of them. {@link AuditLog#query} returns at
 * most {@link #MAX_LIMIT} rows; {@link AuditLog#export} honours {@code limit} without that cap.
 */
public record AuditQuery(
    String typePrefix,
    String agent,
    String runId,
    Instant since,
    Long afterId,
    int limit,
    Map<String, String> labels) {

  /** The most rows one {@link AuditLog#query} returns. */
  public static final int MAX_LIMIT = 1000;

  public AuditQuery {
    if (limit < 1) {
      throw new IllegalArgumentException("audit query limit must be at least 1, got " + limit);
    }
    if (afterId != null && afterId < 0) {
      throw new IllegalArgumentException("audit query afterId must not be negative: " + afterId);
    }
    labels = labels == null ? Map.of() : Map.copyOf(labels);
  }

  /** Without label filters. */
  public AuditQuery(
      String typePrefix, String agent, String runId, Instant since, Long afterId, int limit) {
    this(typePrefix, agent, runId, since, afterId, limit, Map.of());
  }

  /** The same filters, and only rows of runs carrying every one of {@code labels}. */
  public AuditQuery withLabels(Map<String, String> labels) {
    return new AuditQuery(typePrefix, agent, runId, since, afterId, limit, labels);
  }

  /** No filters, up to {@code limit} rows. */
  public static AuditQuery all(int limit) {
    return new AuditQuery(null, null, null, null, null, limit);
  }
}
