package dev.agentsandbox.store.internal;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.policy.event.EventType;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Optional;

/**
 * The one place that reads the fields of an egress audit row for the egress index ({@code
 * audit_egress}): {@code host}, {@code port}, {@code reason} and, for an aggregated row, {@code
 * count}. The fields are untrusted text (the proxy runs beside the workload), so they are bounded
 * here: a host that is not at most 253 printable ASCII characters, or a reason that is not at most
 * 64, is indexed as the empty string (no entry can name it; the row itself keeps what was sent); a
 * port that is not a whole number from 1 to 65535 as 0; a count that is not a whole number of at
 * least 1 as 1.
 *
 * @param decision {@code allow} or {@code deny}
 * @param host the host, or empty
 * @param port the port, or 0
 * @param reason the reason's wire name, or empty
 * @param count how many decisions the row stands for
 */
public record EgressIndexRow(String decision, String host, int port, String reason, long count) {
  public static final String ALLOW_TYPE = EventType.EGRESS_ALLOW.wireName();
  public static final String DENY_TYPE = EventType.EGRESS_DENY.wireName();

  private static final int MAX_HOST = 253;
  private static final int MAX_REASON = 64;

  /** The index entry for a row of this type and data, or empty when it is no egress row. */
  public static Optional<EgressIndexRow> of(String type, JsonNode data) {
    String decision;
    if (type.equals(ALLOW_TYPE)) {
      decision = "allow";
    } else if (type.equals(DENY_TYPE)) {
      decision = "deny";
    } else {
      return Optional.empty();
    }
    JsonNode port = data.path("port");
    JsonNode count = data.path("count");
    return Optional.of(
        new EgressIndexRow(
            decision,
            bounded(data.path("host"), MAX_HOST),
            port.isIntegralNumber()
                    && port.canConvertToInt()
                    && port.intValue() >= 1
                    && port.intValue() <= 65535
                ? port.intValue()
                : 0,
            bounded(data.path("reason"), MAX_REASON),
            count.isIntegralNumber() && count.canConvertToLong() && count.longValue() >= 1
                ? count.longValue()
                : 1));
  }

  private static String bounded(JsonNode field, int max) {
    if (!field.isTextual()) {
      return "";
    }
    String text = field.textValue();
    if (text.length() > max) {
      return "";
    }
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < 0x21 || c > 0x7e) {
        return "";
      }
    }
    return text;
  }

  /** Inserts the entry for audit row {@code auditId} inside the caller's transaction. */
  public void insert(Connection connection, long auditId, long timeMs, String agent, String runId)
      throws SQLException {
    try (PreparedStatement insert =
        connection.prepareStatement(
            "INSERT INTO audit_egress"
                + " (audit_id, time_ms, agent, run_id, decision, host, port, reason, count)"
                + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")) {
      bind(insert, auditId, timeMs, agent, runId);
      insert.executeUpdate();
    }
  }

  /** Binds the entry's columns in the order of {@link #insert}'s statement. */
  void bind(PreparedStatement insert, long auditId, long timeMs, String agent, String runId)
      throws SQLException {
    insert.setLong(1, auditId);
    insert.setLong(2, timeMs);
    insert.setString(3, agent);
    insert.setString(4, runId);
    insert.setString(5, decision);
    insert.setString(6, host);
    insert.setInt(7, port);
    insert.setString(8, reason);
    insert.setLong(9, count);
  }
}
