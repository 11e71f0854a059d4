package dev.agentsandbox.store;

/**
 * {@link StepRepositoryContract} on the PostgreSQL server named by {@code
 * AGENT_SANDBOX_TEST_PG_URL}.
 */
class PostgresStepRepositoryIT extends StepRepositoryContract {
  @Override
  StoreFixture newFixture() throws Exception {
    return new PostgresFixture();
  }
}
