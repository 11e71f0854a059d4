package dev.agentsandbox.store;

/** {@link CrashDurabilityContract} on an embedded SQLite file. */
class SqliteCrashDurabilityTest extends CrashDurabilityContract {
  @Override
  StoreFixture newFixture() throws Exception {
    return new SqliteFixture();
  }
}
