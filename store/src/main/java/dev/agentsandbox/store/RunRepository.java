package dev.agentsandbox.store;

import dev.agentsandbox.store.internal.CanonicalJson;
import dev.agentsandbox.store.internal.Columns;
import dev.agentsandbox.store.internal.Database;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;

/** Runs, one row each, inserted when planned and updated as they progress. Thread-safe. */
public final class RunRepository {

  private static final int MAX_RECENT = 1000;
  private static final String COLUMNS =
      "run_id, agent, backend, runtime, status, command, created_at_ms, started_at_ms,"
          + " ended_at_ms, exit_status, end_reason, output_tail, expires_at_ms, owner, kind,"
          + " idle_seconds";

  private final Database database;

  RunRepository(Database database) {
    this.database = database;
  }

  /** Stores a new run; a run id that exists already is a {@link UnableToAccessStoreException}. */
  public void insert(RunRecord run) {
    insert(run, Map.of());
  }

  /**
   * Stores a new run and its labels in one transaction, before any audit row of the run is
   * appended, so that every such row carries them.
   */
  public void insert(RunRecord run, Map<String, String> labels) {
    Objects.requireNonNull(run, "run");
    Objects.requireNonNull(labels, "labels");
    database.inTransaction(
        "insert run " + run.runId(),
        c -> {
          try (PreparedStatement statement =
              c.prepareStatement(
                  "INSERT INTO run_label (run_id, label_key, label_value) VALUES (?, ?, ?)")) {
            for (Map.Entry<String, String> label : new TreeMap<>(labels).entrySet()) {
              statement.setString(1, run.runId());
              statement.setString(2, label.getKey());
              statement.setString(3, label.getValue());
              statement.executeUpdate();
            }
          }
          try (PreparedStatement statement =
              c.prepareStatement(
                  "INSERT INTO run ("
                      + COLUMNS
                      + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")) {
            bind(statement, run);
            statement.executeUpdate();
          }
          return null;
        });
  }

  /** The labels the run was started with, by key; empty for a run without labels. */
  public SortedMap<String, String> labels(String runId) {
    Objects.requireNonNull(runId, "runId");
    return database.read("read the labels of run " + runId, c -> labels(c, runId));
  }

  static SortedMap<String, String> labels(Connection connection, String runId) throws SQLException {
    SortedMap<String, String> labels = new TreeMap<>();
    try (PreparedStatement statement =
        connection.prepareStatement(
            "SELECT label_key, label_value FROM run_label WHERE run_id = ?")) {
      statement.setString(1, runId);
      try (ResultSet rows = statement.executeQuery()) {
        while (rows.next()) {
          labels.put(rows.getString(1), rows.getString(2));
        }
      }
    }
    return labels;
  }

  /** The run called {@code runId}, if stored. */
  public Optional<RunRecord> find(String runId) {
    Objects.requireNonNull(runId, "runId");
    List<RunRecord> rows =
        database.read(
            "find run " + runId,
            c -> select(c, "SELECT " + COLUMNS + " FROM run WHERE run_id = ?", runId));
    return rows.isEmpty() ? Optional.empty() : Optional.of(rows.get(0));
  }

  /**
   * Replaces every field of the stored run with {@code run}'s.
   *
   * @throws UnableToAccessStoreException when no run has that id
   */
  public void update(RunRecord run) {
    Objects.requireNonNull(run, "run");
    database.inTransaction(
        "update run " + run.runId(),
        c -> {
          try (PreparedStatement statement =
              c.prepareStatement(
                  "UPDATE run SET run_id = ?, agent = ?, backend = ?, runtime = ?, status = ?,"
                      + " command = ?, created_at_ms = ?, started_at_ms = ?, ended_at_ms = ?,"
                      + " exit_status = ?, end_reason = ?, output_tail = ?, expires_at_ms = ?,"
                      + " owner = ?, kind = ?, idle_seconds = ? WHERE run_id = ?")) {
            bind(statement, run);
            statement.setString(17, run.runId());
            if (statement.executeUpdate() != 1) {
              throw new SQLException("no run with id " + run.runId() + " is stored");
            }
          }
          return null;
        });
  }

  /** Runs that are pending or running, oldest first (what the reaper and a restart look at). */
  public List<RunRecord> active() {
    return database.read(
        "list active runs",
        c ->
            select(
                c,
                "SELECT "
                    + COLUMNS
                    + " FROM run WHERE status IN ('pending', 'running')"
                    + " ORDER BY created_at_ms, run_id"));
  }

  /** The newest {@code limit} (at most 1000) runs, newest first. */
  public List<RunRecord> recent(int limit) {
    return recent(null, null, null, Map.of(), limit);
  }

  /** The newest runs matching agent, status and creation time, without label filters. */
  public List<RunRecord> recent(String agent, RunStatus status, Instant since, int limit) {
    return recent(agent, status, since, Map.of(), limit);
  }

  /**
   * The newest {@code limit} (at most 1000) runs that match every given filter, newest first.
   *
   * @param agent only this agent's runs, or null for all
   * @param status only runs in this status, or null for all
   * @param since only runs created at or after this instant, or null for all
   * @param labels only runs carrying every one of these labels (key and value); empty for all
   */
  public List<RunRecord> recent(
      String agent, RunStatus status, Instant since, Map<String, String> labels, int limit) {
    return recentAmong(agent == null ? null : Set.of(agent), status, null, since, labels, limit);
  }

  /**
   * The newest {@code limit} (at most 1000) runs that match every given filter, newest first.
   *
   * @param kind only runs of this kind (one-shot runs or sessions), or null for both
   */
  public List<RunRecord> recent(
      String agent,
      RunStatus status,
      RunKind kind,
      Instant since,
      Map<String, String> labels,
      int limit) {
    return recentAmong(agent == null ? null : Set.of(agent), status, kind, since, labels, limit);
  }

  /**
   * The newest {@code limit} (at most 1000) runs of any of {@code agents} that match every other
   * filter, newest first, of either kind.
   *
   * @param agents only these agents' runs (an empty set matches none), or null for all
   */
  public List<RunRecord> recentAmong(
      Set<String> agents, RunStatus status, Instant since, Map<String, String> labels, int limit) {
    return recentAmong(agents, status, null, since, labels, limit);
  }

  /**
   * The newest {@code limit} (at most 1000) runs of any of {@code agents} that match every other
   * filter, newest first.
   *
   * @param agents only these agents' runs (an empty set matches none), or null for all
   * @param kind only runs of this kind (one-shot runs or sessions), or null for both
   */
  public List<RunRecord> recentAmong(
      Set<String> agents,
      RunStatus status,
      RunKind kind,
      Instant since,
      Map<String, String> labels,
      int limit) {
    Objects.requireNonNull(labels, "labels");
    if (limit < 1) {
      throw new IllegalArgumentException("recent runs limit must be at least 1, got " + limit);
    }
    if (agents != null && agents.isEmpty()) {
      return List.of();
    }
    List<String> where = new ArrayList<>();
    List<Object> parameters = new ArrayList<>();
    if (agents != null) {
      List<String> sorted = new ArrayList<>(new TreeSet<>(agents));
      where.add("agent IN (" + String.join(", ", sorted.stream().map(a -> "?").toList()) + ")");
      parameters.addAll(sorted);
    }
    if (status != null) {
      where.add("status = ?");
      parameters.add(status.wireName());
    }
    if (kind != null) {
      where.add("kind = ?");
      parameters.add(kind.wireName());
    }
    if (since != null) {
      where.add("created_at_ms >= ?");
      parameters.add(since.toEpochMilli());
    }
    for (Map.Entry<String, String> label : new TreeMap<>(labels).entrySet()) {
      where.add("run_id IN (SELECT run_id FROM run_label WHERE label_key = ? AND label_value = ?)");
      parameters.add(label.getKey());
      parameters.add(label.getValue());
    }
    String sql =
        "SELECT "
            + COLUMNS
            + " FROM run"
            + (where.isEmpty() ? "" : " WHERE " + String.join(" AND ", where))
            + " ORDER BY created_at_ms DESC, run_id DESC LIMIT "
            + Math.min(limit, MAX_RECENT);
    return database.read("list recent runs", c -> select(c, sql, parameters.toArray()));
  }

  private static void bind(PreparedStatement statement, RunRecord run) throws SQLException {
    statement.setString(1, run.runId());
    statement.setString(2, run.agent());
    statement.setString(3, run.backend());
    statement.setString(4, run.runtime());
    statement.setString(5, run.status().wireName());
    statement.setString(6, CanonicalJson.write(run.command()));
    Columns.setMillis(statement, 7, run.createdAt());
    Columns.setMillis(statement, 8, run.startedAt());
    Columns.setMillis(statement, 9, run.endedAt());
    Columns.setNullableInt(statement, 10, run.exitStatus());
    statement.setString(11, run.endReason());
    statement.setString(12, run.outputTail());
    Columns.setMillis(statement, 13, run.expiresAt());
    statement.setString(14, run.owner());
    statement.setString(15, run.kind().wireName());
    Columns.setNullableInt(statement, 16, run.idleSeconds());
  }

  private static List<RunRecord> select(Connection connection, String sql, Object... parameters)
      throws SQLException {
    List<RunRecord> result = new ArrayList<>();
    try (PreparedStatement statement = connection.prepareStatement(sql)) {
      for (int i = 0; i < parameters.length; i++) {
        if (parameters[i] instanceof Long number) {
          statement.setLong(i + 1, number);
        } else {
          statement.setString(i + 1, (String) parameters[i]);
        }
      }
      try (ResultSet rows = statement.executeQuery()) {
        while (rows.next()) {
          result.add(
              new RunRecord(
                  rows.getString("run_id"),
                  rows.getString("agent"),
                  rows.getString("backend"),
                  rows.getString("runtime"),
                  RunStatus.fromWireName(rows.getString("status")),
                  CanonicalJson.read(rows.getString("command")),
                  Columns.instant(rows, "created_at_ms"),
                  Columns.instant(rows, "started_at_ms"),
                  Columns.instant(rows, "ended_at_ms"),
                  Columns.nullableInt(rows, "exit_status"),
                  rows.getString("end_reason"),
                  rows.getString("output_tail"),
                  Columns.instant(rows, "expires_at_ms"),
                  rows.getString("owner"),
                  RunKind.fromWireName(rows.getString("kind")),
                  Columns.nullableInt(rows, "idle_seconds")));
        }
      }
    }
    return result;
  }
}
