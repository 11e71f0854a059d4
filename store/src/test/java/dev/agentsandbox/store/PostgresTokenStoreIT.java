package dev.agentsandbox.store;

/**
 * {@link TokenStoreContract} on the PostgreSQL server named by {@code AGENT_SANDBOX_TEST_PG_URL}.
 */
class PostgresTokenStoreIT extends TokenStoreContract {
  @Override
  StoreFixture newFixture() throws Exception {
    return new PostgresFixture();
  }
}
