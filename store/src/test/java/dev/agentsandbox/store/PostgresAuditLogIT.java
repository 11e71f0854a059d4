package dev.agentsandbox.store;

/** {@link AuditLogContract} on the PostgreSQL server named by {@code AGENT_SANDBOX_TEST_PG_URL}. */
class PostgresAuditLogIT extends AuditLogContract {
  @Override
  StoreFixture newFixture() throws Exception {
    return new PostgresFixture();
  }
}
