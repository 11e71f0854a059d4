package dev.agentsandbox.store;

/**
 * {@link CrashDurabilityContract} on the PostgreSQL server named by {@code
 * AGENT_SANDBOX_TEST_PG_URL}.
 */
class PostgresCrashDurabilityIT extends CrashDurabilityContract {
  @Override
  StoreFixture newFixture() throws Exception {
    return new PostgresFixture();
  }
}
