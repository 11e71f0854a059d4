package dev.agentsandbox.store;

/** {@link ConcurrencyContract} on an embedded SQLite file. */
class SqliteConcurrencyTest extends ConcurrencyContract {
  @Override
  StoreFixture newFixture() throws Exception {
    return new SqliteFixture();
  }
}
