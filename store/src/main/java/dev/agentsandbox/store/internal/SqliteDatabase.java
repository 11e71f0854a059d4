package dev.agentsandbox.store.internal;

import dev.agentsandbox.store.StoreException;
import dev.agentsandbox.store.StoreFullException;
import dev.agentsandbox.store.UnableToAccessStoreException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.locks.ReentrantLock;
import org.sqlite.SQLiteConfig;

/**
 * One SQLite connection guarded by a fair lock.
 *
 * <p>Why not a pool: SQLite admits one writer per database file at a time, so a pool of writers
 * would only queue inside SQLite's busy handler instead of in a fair Java lock, and reads of a
 * control plane's small tables are fast enough not to need concurrency. One connection also makes
 * the audit chain's serialization inside this process obvious. Other processes on the same file
 * (the CLI's {@code token create} while the server runs) are serialized by SQLite itself: every
 * write transaction begins IMMEDIATE, taking the file's write lock before reading the chain head,
 * and waits up to the busy timeout for it. Reads run in autocommit mode, each statement on a
 * consistent WAL snapshot.
 */
public final class SqliteDatabase implements Database {

  private static final int BUSY_TIMEOUT_MILLIS = 10_000;

  private final Path file;
  private final Connection connection;
  private final ReentrantLock lock = new ReentrantLock(true);

  private SqliteDatabase(Path file, Connection connection) {
    this.file = file;
    this.connection = connection;
  }

  /** Opens the file (which must exist or be creatable) with the pragmas the store relies on. */
  public static SqliteDatabase open(Path file) throws SQLException {
    Connection connection = config().createConnection("jdbc:sqlite:" + file);
    return new SqliteDatabase(file, connection);
  }

  /** The connection settings, shared with the migration run so both see the same pragmas. */
  public static SQLiteConfig config() {
    SQLiteConfig config = new SQLiteConfig();
    config.setJournalMode(SQLiteConfig.JournalMode.WAL);
    // FULL, not NORMAL: in WAL mode NORMAL survives a crash of this process but may lose the last
    // commits on power loss or an OS crash. Every audit row must be durable before the action it
    // records is acted on (docs/architecture.md invariant 10), so each commit pays for one fsync of
    // the WAL.
    config.setSynchronous(SQLiteConfig.SynchronousMode.FULL);
    config.setBusyTimeout(BUSY_TIMEOUT_MILLIS);
    config.enforceForeignKeys(true);
    return config;
  }

  @Override
  public Dialect dialect() {
    return Dialect.SQLITE;
  }

  @Override
  public <T> T inTransaction(String action, SqlWork<T> work) {
    lock.lock();
    try (Statement control = connection.createStatement()) {
      // Explicit statements rather than setAutoCommit(false): sqlite-jdbc opens the next
      // transaction right after commit(), which can wait on another process's write lock and then
      // fail although our commit succeeded. IMMEDIATE takes the write lock up front, so the chain
      // head read below cannot be overtaken by another process before our insert.
      control.execute("BEGIN IMMEDIATE");
      try {
        T result = work.run(connection);
        control.execute("COMMIT");
        return result;
      } catch (SQLException | RuntimeException e) {
        rollbackQuietly(control, e);
        throw e;
      }
    } catch (SQLException e) {
      throw failure(action, e);
    } finally {
      lock.unlock();
    }
  }

  @Override
  public <T> T read(String action, SqlWork<T> work) {
    lock.lock();
    try {
      return work.run(connection);
    } catch (SQLException e) {
      throw failure(action, e);
    } finally {
      lock.unlock();
    }
  }

  @Override
  public boolean ping() {
    lock.lock();
    try (Statement statement = connection.createStatement()) {
      statement.setQueryTimeout(2);
      statement.executeQuery("SELECT count(*) FROM audit_head").close();
      return true;
    } catch (SQLException e) {
      return false;
    } finally {
      lock.unlock();
    }
  }

  @Override
  public void close() {
    lock.lock();
    try {
      connection.close();
    } catch (SQLException e) {
      throw failure("close", e);
    } finally {
      lock.unlock();
    }
  }

  private static void rollbackQuietly(Statement control, Exception cause) {
    try {
      control.execute("ROLLBACK");
    } catch (SQLException e) {
      // SQLite may already have rolled back (e.g. on SQLITE_FULL); keep the first failure.
      cause.addSuppressed(e);
    }
  }

  private StoreException failure(String action, SQLException e) {
    if (diskFull(e)) {
      return new StoreFullException(
          action
              + " in the SQLite store "
              + file
              + ": the disk is full ("
              + e.getMessage()
              + "); the transaction was rolled back, nothing of it was written",
          e);
    }
    return new UnableToAccessStoreException(
        action
            + " in the SQLite store "
            + file
            + ": "
            + e.getMessage()
            + " (check that the file is writable and the disk is not full)",
        e);
  }

  /**
   * SQLITE_FULL (13), or an I/O error whose cause is a full disk (a WAL write or its fsync may be
   * reported as SQLITE_IOERR_* with the operating system's ENOSPC).
   */
  static boolean diskFull(SQLException e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException sql && (sql.getErrorCode() & 0xff) == 13) {
        return true;
      }
      String message = t.getMessage();
      if (message != null
          && (message.contains("SQLITE_FULL")
              || message.contains("disk is full")
              || message.contains("No space left on device"))) {
        return true;
      }
    }
    return false;
  }
}
