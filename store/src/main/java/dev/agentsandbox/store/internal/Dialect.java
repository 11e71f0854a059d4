package dev.agentsandbox.store.internal;

import java.sql.SQLException;
import org.sqlite.SQLiteErrorCode;
import org.sqlite.SQLiteException;

/** The two databases the store speaks, and the few places where their SQL differs. */
public enum Dialect {
  SQLITE("sqlite"),
  POSTGRESQL("postgresql");

  private final String id;

  Dialect(String id) {
    this.id = id;
  }

  /** Name used by {@code Store.dialect()} and as the Flyway migration folder. */
  public String id() {
    return id;
  }

  /**
   * Locks the audit chain head row for the rest of the transaction. SQLite has no row locks; its
   * write transactions start with BEGIN IMMEDIATE, which already holds the database's only write
   * lock, so a plain read is enough there.
   */
  public String lockAuditHeadSql() {
    return switch (this) {
      case SQLITE -> "SELECT last_id, last_hash FROM audit_head WHERE id = 1";
      case POSTGRESQL -> "SELECT last_id, last_hash FROM audit_head WHERE id = 1 FOR UPDATE";
    };
  }

  /** True when the exception reports a broken UNIQUE or PRIMARY KEY constraint. */
  public boolean isUniqueViolation(SQLException e) {
    return switch (this) {
      case SQLITE ->
          e instanceof SQLiteException sqlite
              && (sqlite.getResultCode() == SQLiteErrorCode.SQLITE_CONSTRAINT_UNIQUE
                  || sqlite.getResultCode() == SQLiteErrorCode.SQLITE_CONSTRAINT_PRIMARYKEY);
      case POSTGRESQL -> "23505".equals(e.getSQLState());
    };
  }
}
