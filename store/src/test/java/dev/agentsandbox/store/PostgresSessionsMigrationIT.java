package dev.agentsandbox.store;

/**
 * {@link SessionsMigrationContract} on the PostgreSQL server named by {@code
 * AGENT_SANDBOX_TEST_PG_URL}.
 */
class PostgresSessionsMigrationIT extends SessionsMigrationContract {
  @Override
  StoreFixture newFixture() throws Exception {
    return new PostgresFixture();
  }

  @Override
  String dialect() {
    return "postgresql";
  }
}
