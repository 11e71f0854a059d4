package dev.agentsandbox.store;

/** {@link StepRepositoryContract} on an embedded SQLite file. */
class SqliteStepRepositoryTest extends StepRepositoryContract {
  @Override
  StoreFixture newFixture() throws Exception {
    return new SqliteFixture();
  }
}
