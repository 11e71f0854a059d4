package dev.agentsandbox.store;

import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.HexFormat;

/**
 * A fresh schema in the PostgreSQL database named by {@code AGENT_SANDBOX_TEST_PG_URL}, dropped
 * afterwards, so that parallel test runs on one server never see each other's rows.
 */
final class PostgresFixture implements StoreFixture {

  static final String URL_VARIABLE = "AGENT_SANDBOX_TEST_PG_URL";

  private final String baseUrl;
  private final String schema;

  PostgresFixture() throws Exception {
    String configured = System.getenv(URL_VARIABLE);
    if (configured == null || configured.isBlank()) {
      throw new IllegalStateException(
          "PostgreSQL integration tests need "
              + URL_VARIABLE
              + " (run `eval \"$(scripts/services/postgres.sh start)\"` first; CI sets it)");
    }
    baseUrl = configured;
    byte[] random = new byte[6];
    new SecureRandom().nextBytes(random);
    schema = "store_test_" + HexFormat.of().formatHex(random);
    executeOn(baseUrl, "CREATE SCHEMA " + schema);
  }

  @Override
  public String url() {
    return baseUrl + (baseUrl.contains("?") ? "&" : "?") + "currentSchema=" + schema;
  }

  @Override
  public Connection connect() throws Exception {
    return DriverManager.getConnection(url());
  }

  @Override
  public void executeBypassingAuditTriggers(String sql) throws Exception {
    // What a role that owns the table can always do; the hash chain is the defence against it.
    execute("ALTER TABLE audit_log DISABLE TRIGGER USER");
    try {
      execute(sql);
    } finally {
      execute("ALTER TABLE audit_log ENABLE TRIGGER USER");
    }
  }

  @Override
  public void refuseAuditInsertsBy(String actor) throws Exception {
    execute(
        "CREATE FUNCTION refuse_actor() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.actor"
            + " = '"
            + actor
            + "' THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END; $$;\n"
            + "CREATE TRIGGER refuse_actor BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE"
            + " FUNCTION refuse_actor()");
  }

  @Override
  public void close() throws Exception {
    executeOn(baseUrl, "DROP SCHEMA " + schema + " CASCADE");
  }

  private static void executeOn(String url, String sql) throws Exception {
    try (Connection connection = DriverManager.getConnection(url);
        Statement statement = connection.createStatement()) {
      statement.setQueryTimeout(30);
      statement.execute(sql);
    }
  }
}
