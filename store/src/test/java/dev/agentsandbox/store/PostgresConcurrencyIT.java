package dev.agentsandbox.store;

/**
 * {@link ConcurrencyContract} on the PostgreSQL server named by {@code AGENT_SANDBOX_TEST_PG_URL}.
 */
class PostgresConcurrencyIT extends ConcurrencyContract {
  @Override
  StoreFixture newFixture() throws Exception {
    return new PostgresFixture();
  }
}
