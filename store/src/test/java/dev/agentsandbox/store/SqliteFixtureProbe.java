package dev.agentsandbox.store;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;

/** A raw connection to a SQLite file, to look at what the store wrote. */
final class SqliteFixtureProbe {

  private final Path file;

  SqliteFixtureProbe(Path file) {
    this.file = file;
  }

  String pragma(String name) throws Exception {
    try (Connection connection = DriverManager.getConnection("jdbc:sqlite:" + file);
        Statement statement = connection.createStatement();
        ResultSet rows = statement.executeQuery("PRAGMA " + name)) {
      rows.next();
      return rows.getString(1);
    }
  }

  void execute(String sql) throws Exception {
    try (Connection connection = DriverManager.getConnection("jdbc:sqlite:" + file);
        Statement statement = connection.createStatement()) {
      statement.execute(sql);
    }
  }
}
