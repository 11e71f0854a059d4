package dev.agentsandbox.server;

import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;

/** Egress proposals and impacts on the embedded SQLite store (no daemon needed). */
class EgressEvidenceSqliteTest extends EgressEvidenceContract {
  @TempDir Path dir;

  @Override
  String newStoreUrl() {
    return "jdbc:sqlite:" + dir.resolve("store.db");
  }
}
