package dev.agentsandbox.store.internal;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.agentsandbox.store.StoreException;
import dev.agentsandbox.store.StoreFullException;
import dev.agentsandbox.store.UnableToAccessStoreException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/** A HikariCP pool of PostgreSQL connections; serialization of audit appends is a row lock. */
public final class PostgresDatabase implements Database {

  private static final int POOL_SIZE = 8;

  private final String redactedUrl;
  private final HikariDataSource pool;

  private PostgresDatabase(String redactedUrl, HikariDataSource pool) {
    this.redactedUrl = redactedUrl;
    this.pool = pool;
  }

  /**
   * Opens the pool and one connection (fails fast when the server is unreachable or refuses the
   * credentials). The credentials are handed to Hikari separately so that no URL it logs can carry
   * the password.
   */
  public static PostgresDatabase open(JdbcUrl url) {
    HikariConfig config = new HikariConfig();
    config.setPoolName("agent-sandbox-store");
    config.setJdbcUrl(url.withoutCredentials());
    url.user().ifPresent(config::setUsername);
    url.password().ifPresent(config::setPassword);
    config.setMaximumPoolSize(POOL_SIZE);
    config.setMinimumIdle(1);
    config.setAutoCommit(true);
    config.setConnectionTimeout(10_000);
    config.setInitializationFailTimeout(10_000);
    // A server or role configured with synchronous_commit=off acknowledges commits before they are
    // on disk, so an audit row could be lost in a crash (docs/architecture.md invariant 10).
    // Upgrade only "off":
    // "local", "remote_write" and "remote_apply" are at least as durable and stay as configured.
    config.setConnectionInitSql(
        "SELECT set_config('synchronous_commit', CASE current_setting('synchronous_commit')"
            + " WHEN 'off' THEN 'on' ELSE current_setting('synchronous_commit') END, false)");
    // READ COMMITTED (the default) is enough: the only read-modify-write paths are the audit head,
    // which is locked FOR UPDATE, and config versions, guarded by their primary key.
    return new PostgresDatabase(url.redacted(), new HikariDataSource(config));
  }

  /** The pool, for the migration run. */
  public DataSource dataSource() {
    return pool;
  }

  @Override
  public Dialect dialect() {
    return Dialect.POSTGRESQL;
  }

  @Override
  public <T> T inTransaction(String action, SqlWork<T> work) {
    try (Connection connection = pool.getConnection()) {
      connection.setAutoCommit(false);
      try {
        T result = work.run(connection);
        connection.commit();
        return result;
      } catch (SQLException | RuntimeException e) {
        try {
          connection.rollback();
        } catch (SQLException rollbackFailure) {
          e.addSuppressed(rollbackFailure);
        }
        throw e;
      } finally {
        connection.setAutoCommit(true);
      }
    } catch (SQLException e) {
      throw failure(action, e);
    }
  }

  @Override
  public <T> T read(String action, SqlWork<T> work) {
    try (Connection connection = pool.getConnection()) {
      return work.run(connection);
    } catch (SQLException e) {
      throw failure(action, e);
    }
  }

  @Override
  public boolean ping() {
    try (Connection connection = pool.getConnection();
        Statement statement = connection.createStatement()) {
      statement.setQueryTimeout(2);
      statement.executeQuery("SELECT count(*) FROM audit_head").close();
      return true;
    } catch (SQLException e) {
      return false;
    }
  }

  @Override
  public void close() {
    pool.close();
  }

  private StoreException failure(String action, SQLException e) {
    // 53100 disk_full (and 53000 insufficient_resources with it): the server rolled back.
    if ("53100".equals(e.getSQLState())) {
      return new StoreFullException(
          action
              + " in the PostgreSQL store "
              + redactedUrl
              + ": the server's disk is full ("
              + e.getMessage()
              + "); the transaction was rolled back, nothing of it was written",
          e);
    }
    return new UnableToAccessStoreException(
        action
            + " in the PostgreSQL store "
            + redactedUrl
            + ": "
            + e.getMessage()
            + " (SQLState "
            + e.getSQLState()
            + "; check that the server is reachable and the role may write the schema)",
        e);
  }
}
