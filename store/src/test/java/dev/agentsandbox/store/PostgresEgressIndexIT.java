package dev.agentsandbox.store;

/**
 * {@link EgressIndexContract} on the PostgreSQL server named by {@code AGENT_SANDBOX_TEST_PG_URL}.
 */
class PostgresEgressIndexIT extends EgressIndexContract {
  @Override
  StoreFixture newFixture() throws Exception {
    return new PostgresFixture();
  }
}
