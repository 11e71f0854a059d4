package dev.agentsandbox.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Opening SQLite stores: directories, pragmas, migrations, refusals. */
class SqliteStoreTest {

  @TempDir Path directory;

  @Test
  void openCreatesParentDirectoriesAndMigrates() throws Exception {
    Path file = directory.resolve("a").resolve("b").resolve("store.db");

    try (Store store = Store.open("jdbc:sqlite:" + file)) {
      assertThat(Files.isRegularFile(file)).isTrue();
      assertThat(store.dialect()).isEqualTo("sqlite");
      assertThat(store.ping()).isTrue();
    }
  }

  @Test
  void fileUsesWriteAheadLoggingAndFullSync() throws Exception {
    Path file = directory.resolve("store.db");
    try (Store store = Store.open("jdbc:sqlite:" + file)) {
      store.audit().append(new AuditEvent("agent_sandbox.launch", "admin", null, null, null));
      SqliteFixtureProbe probe = new SqliteFixtureProbe(file);
      assertThat(probe.pragma("journal_mode")).isEqualTo("wal");
    }
  }

  @Test
  void reopeningAMigratedFileKeepsItsData() {
    String url = "jdbc:sqlite:" + directory.resolve("store.db");
    try (Store store = Store.open(url)) {
      store.tokens().create("ci", java.util.Set.of("agent_sandbox.read"), null);
    }
    try (Store store = Store.open(url)) {
      assertThat(store.tokens().list()).extracting(TokenInfo::name).containsExactly("ci");
    }
  }

  @Test
  void aStoreKeepsOneIdentityAcrossOpensAndTwoStoresHaveTwo() {
    String url = "jdbc:sqlite:" + directory.resolve("store.db");
    String first;
    try (Store store = Store.open(url)) {
      first = store.identity();
      assertThat(first).matches("[0-9a-f]{32}");
      assertThat(store.identity()).isEqualTo(first);
    }
    try (Store store = Store.open(url)) {
      assertThat(store.identity()).as("the same store, opened again").isEqualTo(first);
    }
    try (Store other = Store.open("jdbc:sqlite:" + directory.resolve("other.db"))) {
      assertThat(other.identity()).matches("[0-9a-f]{32}").isNotEqualTo(first);
    }
  }

  @Test
  void inMemoryDatabaseIsRefused() {
    assertThatThrownBy(() -> Store.open("jdbc:sqlite::memory:"))
        .isInstanceOf(UnableToOpenStoreException.class)
        .hasMessageContaining("only a file path is supported");
  }

  @Test
  void unwritableDirectoryIsAnActionableError() throws Exception {
    Path blocker = Files.writeString(directory.resolve("not-a-directory"), "x");

    assertThatThrownBy(() -> Store.open("jdbc:sqlite:" + blocker.resolve("store.db")))
        .isInstanceOf(UnableToOpenStoreException.class)
        .hasMessageStartingWith("open the SQLite store at")
        .hasMessageContaining("choose a writable path");
  }

  @Test
  void unsupportedUrlIsRefusedWithoutShowingThePassword() {
    assertThatThrownBy(() -> Store.open("jdbc:mysql://db:3306/x?user=u&password=hunter2"))
        .isInstanceOf(UnableToOpenStoreException.class)
        .hasMessageContaining("unsupported URL")
        .hasMessageNotContaining("hunter2");
  }

  @Test
  void fileOfANewerSchemaIsRefused() throws Exception {
    String url = "jdbc:sqlite:" + directory.resolve("store.db");
    try (Store store = Store.open(url)) {
      assertThat(store.ping()).isTrue();
    }
    new SqliteFixtureProbe(directory.resolve("store.db"))
        .execute(
            "INSERT INTO flyway_schema_history (installed_rank, version, description, type,"
                + " script, checksum, installed_by, execution_time, success) VALUES (99, '99',"
                + " 'future', 'SQL', 'V99__future.sql', 0, 'test', 0, 1)");

    assertThatThrownBy(() -> Store.open(url))
        .isInstanceOf(UnableToOpenStoreException.class)
        .hasMessageStartingWith("migrate the sqlite store at");
  }
}
