package dev.agentsandbox.store.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Optional;
import org.flywaydb.core.api.MigrationVersion;
import org.flywaydb.core.api.migration.Context;
import org.flywaydb.core.api.migration.JavaMigration;

/**
 * Migration 7, on both dialects: indexes the egress rows appended before migration 6 created {@code
 * audit_egress}, through {@link EgressIndexRow} exactly as an append does, page by page so memory
 * stays bounded. It reads the audit log and writes only the index.
 */
public final class EgressIndexBackfill implements JavaMigration {
  private static final int PAGE = 5_000;

  @Override
  public MigrationVersion getVersion() {
    return MigrationVersion.fromVersion("7");
  }

  @Override
  public String getDescription() {
    return "egress index backfill";
  }

  @Override
  public Integer getChecksum() {
    // A constant: Flyway compares it to the applied one; change it only with the code's meaning.
    return 1;
  }

  @Override
  public boolean canExecuteInTransaction() {
    return true;
  }

  @Override
  public void migrate(Context context) throws SQLException {
    Connection connection = context.getConnection();
    long after = 0;
    while (true) {
      long last = after;
      int read = 0;
      try (PreparedStatement select =
              connection.prepareStatement(
                  "SELECT id, time_ms, type, agent, run_id, data FROM audit_log"
                      + " WHERE id > ? AND type IN (?, ?) ORDER BY id LIMIT ?");
          PreparedStatement insert =
              connection.prepareStatement(
                  "INSERT INTO audit_egress"
                      + " (audit_id, time_ms, agent, run_id, decision, host, port, reason, count)"
                      + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")) {
        select.setLong(1, after);
        select.setString(2, EgressIndexRow.ALLOW_TYPE);
        select.setString(3, EgressIndexRow.DENY_TYPE);
        select.setInt(4, PAGE);
        try (ResultSet rows = select.executeQuery()) {
          while (rows.next()) {
            read++;
            last = rows.getLong("id");
            Optional<EgressIndexRow> entry =
                EgressIndexRow.of(
                    rows.getString("type"), CanonicalJson.read(rows.getString("data")));
            if (entry.isPresent()) {
              entry
                  .get()
                  .bind(
                      insert,
                      last,
                      rows.getLong("time_ms"),
                      rows.getString("agent"),
                      rows.getString("run_id"));
              insert.addBatch();
            }
          }
        }
        insert.executeBatch();
      }
      if (read < PAGE) {
        return;
      }
      after = last;
    }
  }
}
