package dev.agentsandbox.store;

import java.time.Instant;

/**
 * Filters for reading the audit log; null fields do not filter. {@link AuditLog#query} returns at
 * most {@link #MAX_LIMIT} rows; {@link AuditLog#export} honours {@code limit} without that cap.
 */
public record AuditQuery(
    String typePrefix, String agent, String runId, Instant since, Long afterId, int limit) {

  /** The most rows one {@link AuditLog#query} returns. */
  public static final int MAX_LIMIT = 1000;

  public AuditQuery {
    if (limit < 1) {
      throw new IllegalArgumentException("audit query limit must be at least 1, got " + limit);
    }
    if (afterId != null && afterId < 0) {
      throw new IllegalArgumentException("audit query afterId must not be negative: " + afterId);
    }
  }

  /** No filters, up to {@code limit} rows. */
  public static AuditQuery all(int limit) {
    return new AuditQuery(null, null, null, null, null, limit);
  }
}
