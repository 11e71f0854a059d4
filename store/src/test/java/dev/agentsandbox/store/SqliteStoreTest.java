package dev.agentsandbox.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
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

  /**
   * The store holds the audit log, token hashes and every run's command and output: no other local
   * user may read it. After real use (a migration, writes from two connections, the write-ahead log
   * and its index in place), the folder the store created is 0700 and every file in it 0600.
   */
  @Test
  void theFolderAndEveryFileSqliteWritesAreTheOwnersOnly() throws Exception {
    Path data = directory.resolve("data");
    Path file = data.resolve("agent-sandbox.db");
    try (Store store = Store.open("jdbc:sqlite:" + file);
        Store second = Store.open("jdbc:sqlite:" + file)) {
      store.tokens().create("ci", java.util.Set.of("agent_sandbox.read"), null);
      store.audit().append(new AuditEvent("agent_sandbox.launch", "admin", null, null, null));
      second.audit().append(new AuditEvent("agent_sandbox.launch", "admin", null, null, null));
      assertThat(Files.exists(data.resolve("agent-sandbox.db-wal"))).as("the WAL exists").isTrue();
      assertThat(Files.exists(data.resolve("agent-sandbox.db-shm"))).as("its index too").isTrue();
      assertThat(modes(data)).as("modes while open").isEqualTo(ownerOnly(data));
    }
    assertThat(modes(data)).as("modes after close").isEqualTo(ownerOnly(data));
  }

  @Test
  void aStoreAnOlderVersionLeftReadableIsNarrowedWhenOpened() throws Exception {
    Path file = directory.resolve("old.db");
    try (Store store = Store.open("jdbc:sqlite:" + file)) {
      store.audit().append(new AuditEvent("agent_sandbox.launch", "admin", null, null, null));
    }
    Path wal = directory.resolve("old.db-wal");
    Files.writeString(wal, ""); // a WAL left by a crash, as readable as the file was
    for (Path p : List.of(file, wal)) {
      Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rw-r--r--"));
    }
    try (Store store = Store.open("jdbc:sqlite:" + file)) {
      store.audit().append(new AuditEvent("agent_sandbox.launch", "admin", null, null, null));
      for (String name : List.of("old.db", "old.db-wal", "old.db-shm")) {
        assertThat(mode(directory.resolve(name))).as(name).isEqualTo("rw-------");
      }
    }
  }

  private static Map<String, String> modes(Path folder) throws Exception {
    Map<String, String> modes = new TreeMap<>();
    modes.put(".", mode(folder));
    try (var files = Files.list(folder)) {
      for (Path p : files.toList()) {
        modes.put(p.getFileName().toString(), mode(p));
      }
    }
    return modes;
  }

  private static Map<String, String> ownerOnly(Path folder) throws Exception {
    Map<String, String> expected = new TreeMap<>();
    modes(folder)
        .forEach((name, mode) -> expected.put(name, name.equals(".") ? "rwx------" : "rw-------"));
    return expected;
  }

  private static String mode(Path p) throws Exception {
    return PosixFilePermissions.toString(Files.getPosixFilePermissions(p));
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
