package dev.agentsandbox.store;

import dev.agentsandbox.store.internal.CanonicalJson;
import dev.agentsandbox.store.internal.Columns;
import dev.agentsandbox.store.internal.Database;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The steps of sessions, one row each: inserted when a step starts, updated once when it ends, so
 * that a session's steps stay readable after it ended and after the control plane restarted.
 * Thread-safe.
 */
public final class StepRepository {
  /** The most steps one listing returns. */
  public static final int MAX_LIST = 10_000;

  private static final String SUMMARY_COLUMNS =
      "run_id, step, actor, command, cwd, background, timeout_seconds, stdin_bytes,"
          + " started_at_ms, ended_at_ms, end_reason, exit_status, duration_ms, output_bytes,"
          + " output_truncated, egress_denied, detail";
  private static final String COLUMNS = SUMMARY_COLUMNS + ", stdout_tail, stderr_tail";

  private final Database database;

  StepRepository(Database database) {
    this.database = database;
  }

  /** Stores a step that has just started. */
  public void insert(StepRecord step) {
    Objects.requireNonNull(step, "step");
    database.inTransaction(
        "insert step " + step.step() + " of run " + step.runId(),
        c -> {
          try (PreparedStatement statement =
              c.prepareStatement(
                  "INSERT INTO run_step ("
                      + COLUMNS
                      + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")) {
            bind(statement, step);
            statement.executeUpdate();
          }
          return null;
        });
  }

  /**
   * Replaces what can change of a stored step (its end) with {@code step}'s.
   *
   * @throws UnableToAccessStoreException when no such step is stored
   */
  public void update(StepRecord step) {
    Objects.requireNonNull(step, "step");
    database.inTransaction(
        "update step " + step.step() + " of run " + step.runId(),
        c -> {
          try (PreparedStatement statement =
              c.prepareStatement(
                  "UPDATE run_step SET ended_at_ms = ?, end_reason = ?, exit_status = ?,"
                      + " duration_ms = ?, output_bytes = ?, output_truncated = ?,"
                      + " egress_denied = ?, detail = ?, stdout_tail = ?, stderr_tail = ?"
                      + " WHERE run_id = ? AND step = ?")) {
            Columns.setMillis(statement, 1, step.endedAt());
            statement.setString(2, step.endReason());
            Columns.setNullableInt(statement, 3, step.exitStatus());
            setNullableLong(statement, 4, step.durationMs());
            statement.setLong(5, step.outputBytes());
            statement.setBoolean(6, step.outputTruncated());
            statement.setInt(7, step.egressDenied());
            statement.setString(8, step.detail());
            statement.setString(9, step.stdoutTail());
            statement.setString(10, step.stderrTail());
            statement.setString(11, step.runId());
            statement.setInt(12, step.step());
            if (statement.executeUpdate() != 1) {
              throw new SQLException(
                  "no step " + step.step() + " of run " + step.runId() + " is stored");
            }
          }
          return null;
        });
  }

  /** Step {@code step} of {@code runId}, with its stored output tails. */
  public Optional<StepRecord> find(String runId, int step) {
    Objects.requireNonNull(runId, "runId");
    List<StepRecord> rows =
        database.read(
            "find step " + step + " of run " + runId,
            c ->
                select(
                    c,
                    "SELECT " + COLUMNS + " FROM run_step WHERE run_id = ? AND step = ?",
                    true,
                    runId,
                    step));
    return rows.isEmpty() ? Optional.empty() : Optional.of(rows.get(0));
  }

  /**
   * The steps of {@code runId} numbered above {@code after}, in order, at most {@code limit} (and
   * at most {@value #MAX_LIST}); their output tails are not read (null).
   */
  public List<StepRecord> list(String runId, int after, int limit) {
    Objects.requireNonNull(runId, "runId");
    if (limit < 1) {
      throw new IllegalArgumentException("a step listing's limit is at least 1, got " + limit);
    }
    return database.read(
        "list the steps of run " + runId,
        c ->
            select(
                c,
                "SELECT "
                    + SUMMARY_COLUMNS
                    + " FROM run_step WHERE run_id = ? AND step > ? ORDER BY step LIMIT "
                    + Math.min(limit, MAX_LIST),
                false,
                runId,
                after));
  }

  /** How many steps {@code runId} has started. */
  public int count(String runId) {
    Objects.requireNonNull(runId, "runId");
    return database.read(
        "count the steps of run " + runId,
        c -> {
          try (PreparedStatement statement =
              c.prepareStatement("SELECT COUNT(*) FROM run_step WHERE run_id = ?")) {
            statement.setString(1, runId);
            try (ResultSet rows = statement.executeQuery()) {
              rows.next();
              return rows.getInt(1);
            }
          }
        });
  }

  /** The steps of {@code runId} that have not ended, in order (what recovery ends). */
  public List<StepRecord> running(String runId) {
    Objects.requireNonNull(runId, "runId");
    return database.read(
        "list the running steps of run " + runId,
        c ->
            select(
                c,
                "SELECT "
                    + COLUMNS
                    + " FROM run_step WHERE run_id = ? AND ended_at_ms IS NULL ORDER BY step",
                true,
                runId));
  }

  private static void bind(PreparedStatement statement, StepRecord step) throws SQLException {
    statement.setString(1, step.runId());
    statement.setInt(2, step.step());
    statement.setString(3, step.actor());
    statement.setString(4, CanonicalJson.write(step.command()));
    statement.setString(5, step.cwd());
    statement.setBoolean(6, step.background());
    statement.setInt(7, step.timeoutSeconds());
    statement.setLong(8, step.stdinBytes());
    Columns.setMillis(statement, 9, step.startedAt());
    Columns.setMillis(statement, 10, step.endedAt());
    statement.setString(11, step.endReason());
    Columns.setNullableInt(statement, 12, step.exitStatus());
    setNullableLong(statement, 13, step.durationMs());
    statement.setLong(14, step.outputBytes());
    statement.setBoolean(15, step.outputTruncated());
    statement.setInt(16, step.egressDenied());
    statement.setString(17, step.detail());
    statement.setString(18, step.stdoutTail());
    statement.setString(19, step.stderrTail());
  }

  private static void setNullableLong(PreparedStatement statement, int index, Long value)
      throws SQLException {
    if (value == null) {
      statement.setNull(index, Types.BIGINT);
    } else {
      statement.setLong(index, value);
    }
  }

  private static List<StepRecord> select(
      Connection connection, String sql, boolean withTails, Object... parameters)
      throws SQLException {
    List<StepRecord> result = new ArrayList<>();
    try (PreparedStatement statement = connection.prepareStatement(sql)) {
      for (int i = 0; i < parameters.length; i++) {
        if (parameters[i] instanceof Integer number) {
          statement.setInt(i + 1, number);
        } else {
          statement.setString(i + 1, (String) parameters[i]);
        }
      }
      try (ResultSet rows = statement.executeQuery()) {
        while (rows.next()) {
          long duration = rows.getLong("duration_ms");
          Long durationMs = rows.wasNull() ? null : duration;
          result.add(
              new StepRecord(
                  rows.getString("run_id"),
                  rows.getInt("step"),
                  rows.getString("actor"),
                  CanonicalJson.read(rows.getString("command")),
                  rows.getString("cwd"),
                  rows.getBoolean("background"),
                  rows.getInt("timeout_seconds"),
                  rows.getLong("stdin_bytes"),
                  Columns.instant(rows, "started_at_ms"),
                  Columns.instant(rows, "ended_at_ms"),
                  rows.getString("end_reason"),
                  Columns.nullableInt(rows, "exit_status"),
                  durationMs,
                  rows.getLong("output_bytes"),
                  withTails ? rows.getString("stdout_tail") : null,
                  withTails ? rows.getString("stderr_tail") : null,
                  rows.getBoolean("output_truncated"),
                  rows.getInt("egress_denied"),
                  rows.getString("detail")));
        }
      }
    }
    return result;
  }
}
