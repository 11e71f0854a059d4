package dev.agentsandbox.store.internal;

/**
 * Lends JDBC connections for reads and for write transactions. Implementations are thread-safe; a
 * {@link SqlWork} must not keep the connection after it returns.
 */
public interface Database extends AutoCloseable {

  Dialect dialect();

  /**
   * Runs {@code work} in one transaction and commits it durably before returning; rolls back on any
   * exception. {@code action} names the operation for error messages ("append audit row").
   */
  <T> T inTransaction(String action, SqlWork<T> work);

  /**
   * Runs read-only {@code work} outside an explicit transaction (each statement sees a snapshot).
   */
  <T> T read(String action, SqlWork<T> work);

  /** True when a trivial query succeeds within a short timeout. */
  boolean ping();

  @Override
  void close();
}
