package dev.agentsandbox.store;

/** {@link AuditLogContract} on an embedded SQLite file. */
class SqliteAuditLogTest extends AuditLogContract {
  @Override
  StoreFixture newFixture() throws Exception {
    return new SqliteFixture();
  }
}
