package dev.agentsandbox.store;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/** A fresh, empty database for one test, reachable by URL, removed by {@link #close()}. */
interface StoreFixture extends AutoCloseable {

  String url();

  /** A raw connection, as an operator (or attacker) with a SQL shell would have. */
  Connection connect() throws Exception;

  /** Runs SQL with the audit table's append-only triggers out of the way (dropped or disabled). */
  void executeBypassingAuditTriggers(String sql) throws Exception;

  /** Installs a trigger that makes the database refuse audit rows whose actor is {@code actor}. */
  void refuseAuditInsertsBy(String actor) throws Exception;

  /** Runs SQL over a raw connection; several statements are separated by ";\n". */
  default void execute(String sql) throws Exception {
    try (Connection connection = connect();
        Statement statement = connection.createStatement()) {
      statement.setQueryTimeout(30);
      // One statement at a time, since drivers differ on multi-statement strings.
      for (String single : sql.split(";\n")) {
        statement.execute(single);
      }
    }
  }

  /** Every value of every row {@code sql} returns, as text (null stays null). */
  default List<String> queryValues(String sql) throws Exception {
    List<String> values = new ArrayList<>();
    try (Connection connection = connect();
        Statement statement = connection.createStatement();
        ResultSet rows = statement.executeQuery(sql)) {
      int columns = rows.getMetaData().getColumnCount();
      while (rows.next()) {
        for (int column = 1; column <= columns; column++) {
          values.add(rows.getString(column));
        }
      }
    }
    return values;
  }

  @Override
  void close() throws Exception;
}
