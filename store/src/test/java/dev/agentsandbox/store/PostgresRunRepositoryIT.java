package dev.agentsandbox.store;

/**
 * {@link RunRepositoryContract} on the PostgreSQL server named by {@code
 * AGENT_SANDBOX_TEST_PG_URL}.
 */
class PostgresRunRepositoryIT extends RunRepositoryContract {
  @Override
  StoreFixture newFixture() throws Exception {
    return new PostgresFixture();
  }
}
