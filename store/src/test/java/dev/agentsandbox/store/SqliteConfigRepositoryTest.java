package dev.agentsandbox.store;

/** {@link ConfigRepositoryContract} on an embedded SQLite file. */
class SqliteConfigRepositoryTest extends ConfigRepositoryContract {
  @Override
  StoreFixture newFixture() throws Exception {
    return new SqliteFixture();
  }
}
