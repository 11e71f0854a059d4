package dev.agentsandbox.store;

/** {@link RunRepositoryContract} on an embedded SQLite file. */
class SqliteRunRepositoryTest extends RunRepositoryContract {
  @Override
  StoreFixture newFixture() throws Exception {
    return new SqliteFixture();
  }
}
