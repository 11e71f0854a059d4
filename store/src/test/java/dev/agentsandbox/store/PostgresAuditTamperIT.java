package dev.agentsandbox.store;

/**
 * {@link AuditTamperContract} on the PostgreSQL server named by {@code AGENT_SANDBOX_TEST_PG_URL}.
 */
class PostgresAuditTamperIT extends AuditTamperContract {
  @Override
  StoreFixture newFixture() throws Exception {
    return new PostgresFixture();
  }
}
