package dev.agentsandbox.server;

import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.HexFormat;

/**
 * Egress proposals and impacts on a real PostgreSQL server: the URL comes from {@code
 * AGENT_SANDBOX_TEST_PG_URL} (scripts/test.sh starts the server and sets it). Each test gets its
 * own schema, dropped after.
 */
class EgressEvidencePostgresIT extends EgressEvidenceContract {
  private String baseUrl;
  private String schema;

  @Override
  String newStoreUrl() throws Exception {
    baseUrl = System.getenv("AGENT_SANDBOX_TEST_PG_URL");
    if (baseUrl == null || baseUrl.isBlank()) {
      throw new IllegalStateException(
          "AGENT_SANDBOX_TEST_PG_URL is not set: run the tests with scripts/test.sh, which starts"
              + " PostgreSQL (or: eval \"$(scripts/services/postgres.sh start)\"), or skip ITs with"
              + " -DskipITs");
    }
    byte[] random = new byte[6];
    new SecureRandom().nextBytes(random);
    schema = "evidence_test_" + HexFormat.of().formatHex(random);
    execute("CREATE SCHEMA " + schema);
    return baseUrl + (baseUrl.contains("?") ? "&" : "?") + "currentSchema=" + schema;
  }

  @Override
  void dropStore() throws Exception {
    if (schema != null) {
      execute("DROP SCHEMA " + schema + " CASCADE");
    }
  }

  private void execute(String sql) throws Exception {
    try (Connection connection = DriverManager.getConnection(baseUrl);
        Statement statement = connection.createStatement()) {
      statement.execute(sql);
    }
  }
}
