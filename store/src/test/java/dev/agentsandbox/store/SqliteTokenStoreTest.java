package dev.agentsandbox.store;

/** {@link TokenStoreContract} on an embedded SQLite file. */
class SqliteTokenStoreTest extends TokenStoreContract {
  @Override
  StoreFixture newFixture() throws Exception {
    return new SqliteFixture();
  }
}
