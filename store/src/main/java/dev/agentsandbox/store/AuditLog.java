package dev.agentsandbox.store;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.store.internal.AuditHash;
import dev.agentsandbox.store.internal.AuditVerifier;
import dev.agentsandbox.store.internal.CanonicalJson;
import dev.agentsandbox.store.internal.Database;
import dev.agentsandbox.store.internal.EgressIndexRow;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The append-only, hash-chained audit log. Thread-safe; appends from every thread, process and
 * replica sharing the database are serialized on the chain head row, so the chain stays linear.
 * Each append is committed (and, on SQLite, fsynced) before {@link #append} returns.
 */
public final class AuditLog {

  private static final int PAGE = AuditQuery.MAX_LIMIT;

  private final Database database;
  private final Clock clock;

  AuditLog(Database database, Clock clock) {
    this.database = database;
    this.clock = clock;
  }

  /** Appends one row in its own transaction and returns it once it is durable. */
  public AuditRow append(AuditEvent event) {
    return database.inTransaction("append audit row " + event.type(), c -> append(c, event));
  }

  /**
   * Appends several rows in one transaction (consecutive ids, one commit and one fsync), all or
   * none. Every append waits for its commit to be durable, so the throughput of single appends is
   * bounded by the disk's flush latency; a burst of rows (egress decisions) belongs in one call.
   */
  public List<AuditRow> appendAll(List<AuditEvent> events) {
    List<AuditEvent> copy = List.copyOf(events);
    if (copy.isEmpty()) {
      return List.of();
    }
    return database.inTransaction(
        "append " + copy.size() + " audit rows",
        c -> {
          List<AuditRow> rows = new ArrayList<>(copy.size());
          for (AuditEvent event : copy) {
            rows.add(append(c, event));
          }
          return List.copyOf(rows);
        });
  }

  /** Appends inside a caller's transaction (same commit as the change it records). */
  AuditRow append(Connection connection, AuditEvent event) throws SQLException {
    long previousId;
    String previousHash;
    try (PreparedStatement lock =
            connection.prepareStatement(database.dialect().lockAuditHeadSql());
        ResultSet head = lock.executeQuery()) {
      if (!head.next()) {
        throw new SQLException("the audit_head row is missing (was the schema edited by hand?)");
      }
      previousId = head.getLong("last_id");
      previousHash = head.getString("last_hash");
    }
    long id = previousId + 1;
    Instant time = Instant.ofEpochMilli(clock.millis());
    String dataText = CanonicalJson.write(withRunLabels(connection, event));
    // What is stored, read back: the index is derived from it exactly as the backfill derives it.
    com.fasterxml.jackson.databind.JsonNode stored = CanonicalJson.read(dataText);
    String hash =
        AuditHash.of(
            id,
            time.toEpochMilli(),
            event.type(),
            event.actor(),
            event.agent(),
            event.runId(),
            dataText,
            previousHash);
    try (PreparedStatement insert =
        connection.prepareStatement(
            "INSERT INTO audit_log (id, time_ms, type, actor, agent, run_id, data, prev_hash, hash)"
                + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")) {
      insert.setLong(1, id);
      insert.setLong(2, time.toEpochMilli());
      insert.setString(3, event.type());
      insert.setString(4, event.actor());
      insert.setString(5, event.agent());
      insert.setString(6, event.runId());
      insert.setString(7, dataText);
      insert.setString(8, previousHash);
      insert.setString(9, hash);
      insert.executeUpdate();
    }
    // The egress index entry commits with its row (docs/store.md, "The egress index").
    Optional<EgressIndexRow> egress = EgressIndexRow.of(event.type(), stored);
    if (egress.isPresent()) {
      egress.get().insert(connection, id, time.toEpochMilli(), event.agent(), event.runId());
    }
    try (PreparedStatement advance =
        connection.prepareStatement(
            "UPDATE audit_head SET last_id = ?, last_hash = ? WHERE id = 1")) {
      advance.setLong(1, id);
      advance.setString(2, hash);
      advance.executeUpdate();
    }
    return new AuditRow(
        id,
        time,
        event.type(),
        event.actor(),
        event.agent(),
        event.runId(),
        stored,
        previousHash,
        hash);
  }

  /**
   * The event's data with its run's labels under {@code labels}, so that every row of a labelled
   * run carries them inside what its hash covers; the data as given for rows of no run, of a run
   * without labels, or that name their labels themselves.
   */
  private static com.fasterxml.jackson.databind.JsonNode withRunLabels(
      Connection connection, AuditEvent event) throws SQLException {
    if (event.runId() == null || !(event.data() instanceof ObjectNode data) || data.has("labels")) {
      return event.data();
    }
    java.util.SortedMap<String, String> labels = RunRepository.labels(connection, event.runId());
    if (labels.isEmpty()) {
      return data;
    }
    ObjectNode copy = data.deepCopy();
    ObjectNode node = copy.putObject("labels");
    labels.forEach(node::put);
    return copy;
  }

  /**
   * Rows matching {@code q}, oldest first. With {@code afterId} the first rows after it (paging
   * forward); without, the newest {@code min(limit, 1000)} rows.
   */
  public List<AuditRow> query(AuditQuery q) {
    int limit = Math.min(q.limit(), AuditQuery.MAX_LIMIT);
    return database.read("query the audit log", c -> select(c, q, limit));
  }

  /**
   * Writes the matching rows as JSON lines (one {@link #toJson} object per line), oldest first,
   * starting after {@code afterId} (or at the first row) and stopping after {@code limit} rows;
   * pass {@link Integer#MAX_VALUE} for everything. Reads page by page, so memory stays bounded.
   */
  public void export(AuditQuery q, Writer out) {
    long written = 0;
    Long after = q.afterId() == null ? 0L : q.afterId();
    while (written < q.limit()) {
      int page = (int) Math.min(PAGE, q.limit() - written);
      AuditQuery pageQuery =
          new AuditQuery(q.typePrefix(), q.agent(), q.runId(), q.since(), after, page);
      List<AuditRow> rows = database.read("export the audit log", c -> select(c, pageQuery, page));
      try {
        for (AuditRow row : rows) {
          out.write(CanonicalJson.write(toJson(row)));
          out.write('\n');
        }
        out.flush();
      } catch (IOException e) {
        throw new UncheckedIOException("write the audit export: " + e.getMessage(), e);
      }
      written += rows.size();
      if (rows.size() < page) {
        return;
      }
      after = rows.get(rows.size() - 1).id();
    }
  }

  /** The export and API form of a row: snake_case fields, ISO-8601 UTC time. */
  public static ObjectNode toJson(AuditRow row) {
    ObjectNode json = CanonicalJson.mapper().createObjectNode();
    json.put("id", row.id());
    json.put("time", row.time().toString());
    json.put("type", row.type());
    json.put("actor", row.actor());
    json.put("agent", row.agent());
    json.put("run_id", row.runId());
    json.set("data", row.data());
    json.put("prev_hash", row.prevHash());
    json.put("hash", row.hash());
    return json;
  }

  /** The chain head (id 0 and the genesis hash while the log is empty), to record elsewhere. */
  public AuditHead head() {
    return database.read(
        "read the audit chain head",
        c -> {
          try (PreparedStatement statement =
                  c.prepareStatement("SELECT last_id, last_hash FROM audit_head WHERE id = 1");
              ResultSet rows = statement.executeQuery()) {
            if (!rows.next()) {
              throw new SQLException("the audit_head row is missing");
            }
            return new AuditHead(rows.getLong("last_id"), rows.getString("last_hash"));
          }
        });
  }

  /** Checks every row's hash, the links between rows, and the chain head. */
  public VerifyResult verify() {
    return new AuditVerifier(database).verify(null);
  }

  /**
   * Like {@link #verify()}, and also checks that the row {@code anchor} names still exists with
   * that hash: this detects deletion of the newest rows, which the chain alone cannot.
   */
  public VerifyResult verify(AuditHead anchor) {
    return new AuditVerifier(database).verify(anchor);
  }

  /**
   * Verifies the chain from {@code start}, a row an earlier verification passed (its id and hash),
   * rather than from its first row: that row still has that hash, every row after it is intact and
   * linked, the chain head and {@code anchor} name rows that exist with their hashes; and each of
   * {@code recheck} (rows at or before {@code start}) still hashes to its contents and is linked to
   * by the row after it. A full {@link #verify()} is what catches an edit of any other row before
   * {@code start}; this bounds the work to what was appended since.
   */
  public VerifyResult verifyFrom(
      AuditHead start, AuditHead anchor, java.util.Collection<Long> recheck) {
    return new AuditVerifier(database).verifyFrom(start, anchor, recheck);
  }

  private static List<AuditRow> select(Connection connection, AuditQuery q, int limit)
      throws SQLException {
    StringBuilder sql =
        new StringBuilder(
            "SELECT id, time_ms, type, actor, agent, run_id, data, prev_hash, hash"
                + " FROM audit_log WHERE 1 = 1");
    List<Object> parameters = new ArrayList<>();
    if (q.typePrefix() != null) {
      sql.append(" AND substr(type, 1, ?) = ?");
      parameters.add(q.typePrefix().length());
      parameters.add(q.typePrefix());
    }
    if (q.agent() != null) {
      sql.append(" AND agent = ?");
      parameters.add(q.agent());
    }
    if (q.runId() != null) {
      sql.append(" AND run_id = ?");
      parameters.add(q.runId());
    }
    for (Map.Entry<String, String> label : new java.util.TreeMap<>(q.labels()).entrySet()) {
      sql.append(
          " AND run_id IN (SELECT run_id FROM run_label WHERE label_key = ? AND label_value = ?)");
      parameters.add(label.getKey());
      parameters.add(label.getValue());
    }
    if (q.since() != null) {
      sql.append(" AND time_ms >= ?");
      parameters.add(q.since().toEpochMilli());
    }
    boolean newest = q.afterId() == null;
    if (!newest) {
      sql.append(" AND id > ?");
      parameters.add(q.afterId());
    }
    sql.append(newest ? " ORDER BY id DESC" : " ORDER BY id ASC").append(" LIMIT ?");
    parameters.add(limit);
    List<AuditRow> result = new ArrayList<>();
    try (PreparedStatement statement = connection.prepareStatement(sql.toString())) {
      for (int i = 0; i < parameters.size(); i++) {
        statement.setObject(i + 1, parameters.get(i));
      }
      try (ResultSet rows = statement.executeQuery()) {
        while (rows.next()) {
          result.add(
              new AuditRow(
                  rows.getLong("id"),
                  Instant.ofEpochMilli(rows.getLong("time_ms")),
                  rows.getString("type"),
                  rows.getString("actor"),
                  rows.getString("agent"),
                  rows.getString("run_id"),
                  CanonicalJson.read(rows.getString("data")),
                  rows.getString("prev_hash"),
                  rows.getString("hash")));
        }
      }
    }
    if (newest) {
      Collections.reverse(result);
    }
    return result;
  }
}
