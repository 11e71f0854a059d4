package dev.agentsandbox.store.internal;

import java.sql.Connection;
import java.sql.SQLException;

/** A unit of JDBC work run on a connection the {@link Database} lends out. */
@FunctionalInterface
public interface SqlWork<T> {
  T run(Connection connection) throws SQLException;
}
