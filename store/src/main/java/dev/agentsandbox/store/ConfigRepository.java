package dev.agentsandbox.store;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.store.internal.CanonicalJson;
import dev.agentsandbox.store.internal.Columns;
import dev.agentsandbox.store.internal.Database;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Versioned configuration documents with optimistic concurrency; every version is kept.
 * Thread-safe. Two writers that read the same version cannot both save: the (key, version) primary
 * key lets exactly one insert of version n+1 commit.
 */
public final class ConfigRepository {

  private static final int MAX_HISTORY = 1000;

  private final Database database;
  private final AuditLog audit;
  private final Clock clock;

  ConfigRepository(Database database, AuditLog audit, Clock clock) {
    this.database = database;
    this.audit = audit;
    this.clock = clock;
  }

  /** The newest version of {@code key}, if one was ever saved. */
  public Optional<StoredConfig> current(String key) {
    Objects.requireNonNull(key, "key");
    return database.read("read configuration " + key, c -> newest(c, key));
  }

  /**
   * Saves {@code document} as version {@code expectedVersion + 1} and appends {@code auditRow} in
   * the same transaction: both are stored or neither is.
   *
   * @param expectedVersion the version the caller read; 0 when none existed
   * @throws VersionConflictException when the current version is not {@code expectedVersion}
   */
  public StoredConfig save(
      String key, long expectedVersion, JsonNode document, AuditEvent auditRow) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(document, "document");
    Objects.requireNonNull(auditRow, "auditRow");
    if (key.isBlank()) {
      throw new IllegalArgumentException("configuration key must not be blank");
    }
    if (expectedVersion < 0) {
      throw new IllegalArgumentException(
          "expected configuration version must not be negative: " + expectedVersion);
    }
    try {
      return database.inTransaction(
          "save configuration " + key,
          c -> {
            long actual = newest(c, key).map(StoredConfig::version).orElse(0L);
            if (actual != expectedVersion) {
              throw new VersionConflictException(key, expectedVersion, actual);
            }
            StoredConfig saved =
                new StoredConfig(
                    key,
                    expectedVersion + 1,
                    document,
                    Instant.ofEpochMilli(clock.millis()),
                    auditRow.actor());
            insert(c, saved);
            // Written after the config row so that every path takes its locks in the same order
            // (config key, then audit head): no deadlock between a save and a plain append.
            audit.append(c, auditRow);
            return saved;
          });
    } catch (UnableToAccessStoreException e) {
      if (e.getCause() instanceof SQLException sql && database.dialect().isUniqueViolation(sql)) {
        // A concurrent save committed version expected+1 between our read and our insert.
        long actual = current(key).map(StoredConfig::version).orElse(0L);
        throw new VersionConflictException(key, expectedVersion, actual);
      }
      throw e;
    }
  }

  /** Up to {@code limit} (at most 1000) versions of {@code key}, newest first. */
  public List<StoredConfig> history(String key, int limit) {
    Objects.requireNonNull(key, "key");
    if (limit < 1) {
      throw new IllegalArgumentException("history limit must be at least 1, got " + limit);
    }
    return database.read(
        "read the history of configuration " + key,
        c -> select(c, key, Math.min(limit, MAX_HISTORY)));
  }

  private static Optional<StoredConfig> newest(Connection connection, String key)
      throws SQLException {
    List<StoredConfig> rows = select(connection, key, 1);
    return rows.isEmpty() ? Optional.empty() : Optional.of(rows.get(0));
  }

  private static List<StoredConfig> select(Connection connection, String key, int limit)
      throws SQLException {
    List<StoredConfig> result = new ArrayList<>();
    try (PreparedStatement statement =
        connection.prepareStatement(
            "SELECT config_key, version, document, updated_at_ms, updated_by FROM config_version"
                + " WHERE config_key = ? ORDER BY version DESC LIMIT ?")) {
      statement.setString(1, key);
      statement.setInt(2, limit);
      try (ResultSet rows = statement.executeQuery()) {
        while (rows.next()) {
          result.add(
              new StoredConfig(
                  rows.getString("config_key"),
                  rows.getLong("version"),
                  CanonicalJson.read(rows.getString("document")),
                  Columns.instant(rows, "updated_at_ms"),
                  rows.getString("updated_by")));
        }
      }
    }
    return result;
  }

  private static void insert(Connection connection, StoredConfig config) throws SQLException {
    try (PreparedStatement statement =
        connection.prepareStatement(
            "INSERT INTO config_version (config_key, version, document, updated_at_ms, updated_by)"
                + " VALUES (?, ?, ?, ?, ?)")) {
      statement.setString(1, config.key());
      statement.setLong(2, config.version());
      statement.setString(3, CanonicalJson.write(config.document()));
      Columns.setMillis(statement, 4, config.updatedAt());
      statement.setString(5, config.updatedBy());
      statement.executeUpdate();
    }
  }
}
