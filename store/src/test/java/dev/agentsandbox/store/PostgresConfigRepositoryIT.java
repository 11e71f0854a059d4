package dev.agentsandbox.store;

/**
 * {@link ConfigRepositoryContract} on the PostgreSQL server named by {@code
 * AGENT_SANDBOX_TEST_PG_URL}.
 */
class PostgresConfigRepositoryIT extends ConfigRepositoryContract {
  @Override
  StoreFixture newFixture() throws Exception {
    return new PostgresFixture();
  }
}
