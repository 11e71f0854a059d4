package dev.agentsandbox.server;

import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;

/** The admin API on the embedded SQLite store in a temporary directory (no daemon needed). */
class AdminApiSqliteTest extends AdminApiContract {
  @TempDir Path dir;

  @Override
  String newStoreUrl() {
    return "jdbc:sqlite:" + dir.resolve("store.db");
  }
}
