package dev.agentsandbox.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.store.internal.JdbcUrl;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.Test;

/** What only PostgreSQL has: role passwords, TRUNCATE, session settings, a server to lose. */
class PostgresStoreIT extends StoreTestBase {

  @Override
  StoreFixture newFixture() throws Exception {
    return new PostgresFixture();
  }

  @Test
  void dialectAndPing() {
    assertThat(store.dialect()).isEqualTo("postgresql");
    assertThat(store.ping()).isTrue();
  }

  @Test
  void everyOpenOfTheDatabaseSeesOneIdentity() {
    String identity = store.identity();
    assertThat(identity).matches("[0-9a-f]{32}");
    try (Store replica = Store.open(fixture.url())) {
      assertThat(replica.identity())
          .as("a second replica on the same database")
          .isEqualTo(identity);
    }
  }

  @Test
  void truncateIsRefusedByTheTrigger() {
    store.audit().append(new AuditEvent("agent_sandbox.launch", "admin", null, null, null));

    assertThatThrownBy(() -> fixture.execute("TRUNCATE audit_log"))
        .hasMessageContaining("append-only");
    assertThat(store.audit().verify().rowsChecked()).isEqualTo(1);
  }

  @Test
  void pingFailsWhenTheSchemaIsGone() throws Exception {
    fixture.execute("DROP TABLE audit_head");

    assertThat(store.ping()).isFalse();
  }

  @Test
  void wrongPasswordIsAnActionableErrorWithoutThePassword() {
    JdbcUrl url = JdbcUrl.parse(fixture.url());
    String wrong = "not-the-password-4242";
    String withWrongPassword =
        url.withoutCredentials() + "&user=" + url.user().orElseThrow() + "&password=" + wrong;

    assertThatThrownBy(() -> Store.open(withWrongPassword))
        .isInstanceOf(UnableToOpenStoreException.class)
        .hasMessageStartingWith("open the PostgreSQL store at jdbc:postgresql://")
        .hasMessageContaining("password=***")
        .hasMessageContaining("authentication failed")
        .hasMessageNotContaining(wrong);
  }

  @Test
  void unreachableServerIsAnActionableError() {
    // Port 1 on loopback: nothing listens there, so the connection is refused at once.
    assertThatThrownBy(
            () -> Store.open("jdbc:postgresql://127.0.0.1:1/none?user=x&password=secret-1"))
        .isInstanceOf(UnableToOpenStoreException.class)
        .hasMessageContaining("127.0.0.1:1")
        .hasMessageContaining("check that the server runs")
        .hasMessageNotContaining("secret-1");
  }

  @Test
  void synchronousCommitOffIsRaisedToOnForTheStoresSessions() throws Exception {
    String relaxed = fixture.url() + "&options=-c%20synchronous_commit%3Doff";
    try (Store relaxedStore = Store.open(relaxed)) {
      String setting =
          relaxedStore
              .database()
              .read(
                  "read synchronous_commit",
                  c -> {
                    try (Statement statement = c.createStatement();
                        ResultSet rows = statement.executeQuery("SHOW synchronous_commit")) {
                      rows.next();
                      return rows.getString(1);
                    }
                  });
      assertThat(setting).isEqualTo("on");
    }
    // The option itself works: a raw connection with it really is relaxed.
    try (var connection = java.sql.DriverManager.getConnection(relaxed);
        Statement statement = connection.createStatement();
        ResultSet rows = statement.executeQuery("SHOW synchronous_commit")) {
      rows.next();
      assertThat(rows.getString(1)).isEqualTo("off");
    }
  }

  @Test
  void migrationsLiveInTheSchemaOfTheUrl() throws Exception {
    assertThat(
            fixture.queryValues(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema ="
                    + " current_schema() AND table_name IN ('audit_log', 'audit_head',"
                    + " 'config_version', 'api_token', 'run', 'flyway_schema_history')"))
        .containsExactly("6");
  }
}
