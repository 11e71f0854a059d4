package dev.agentsandbox.store;

/** {@link SessionsMigrationContract} on an embedded SQLite file. */
class SqliteSessionsMigrationTest extends SessionsMigrationContract {
  @Override
  StoreFixture newFixture() throws Exception {
    return new SqliteFixture();
  }

  @Override
  String dialect() {
    return "sqlite";
  }
}
