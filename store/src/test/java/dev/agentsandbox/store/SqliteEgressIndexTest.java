package dev.agentsandbox.store;

/** {@link EgressIndexContract} on an embedded SQLite file. */
class SqliteEgressIndexTest extends EgressIndexContract {
  @Override
  StoreFixture newFixture() throws Exception {
    return new SqliteFixture();
  }
}
