package dev.agentsandbox.store;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.util.Comparator;
import java.util.stream.Stream;

/** A SQLite file in a fresh temporary directory. */
final class SqliteFixture implements StoreFixture {

  private final Path directory;
  private final Path file;

  SqliteFixture() throws Exception {
    directory = Files.createTempDirectory("agent-sandbox-store-test");
    file = directory.resolve("nested").resolve("store.db");
  }

  @Override
  public String url() {
    return "jdbc:sqlite:" + file;
  }

  @Override
  public Connection connect() throws Exception {
    return DriverManager.getConnection(url());
  }

  @Override
  public void executeBypassingAuditTriggers(String sql) throws Exception {
    execute("DROP TRIGGER IF EXISTS audit_log_no_update");
    execute("DROP TRIGGER IF EXISTS audit_log_no_delete");
    execute(sql);
  }

  @Override
  public void refuseAuditInsertsBy(String actor) throws Exception {
    execute(
        "CREATE TRIGGER refuse_actor BEFORE INSERT ON audit_log WHEN NEW.actor = '"
            + actor
            + "' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END");
  }

  @Override
  public void close() throws Exception {
    try (Stream<Path> paths = Files.walk(directory)) {
      for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(path);
      }
    }
  }
}
