package dev.agentsandbox.store;

/** {@link AuditTamperContract} on an embedded SQLite file. */
class SqliteAuditTamperTest extends AuditTamperContract {
  @Override
  StoreFixture newFixture() throws Exception {
    return new SqliteFixture();
  }
}
