package dev.agentsandbox.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;

/**
 * Migration V4 (sessions) on a store that already holds runs: every run stored before it reads back
 * as a one-shot run, unchanged, and the new status and tables take rows. Both dialects.
 */
abstract class SessionsMigrationContract {
  abstract StoreFixture newFixture() throws Exception;

  abstract String dialect();

  @Test
  void runsStoredBeforeSessionsExistedStayOneShotRunsAndClosedIsAccepted() throws Exception {
    try (StoreFixture fixture = newFixture()) {
      String url = fixture.url();
      if (url.startsWith("jdbc:sqlite:")) {
        Files.createDirectories(Path.of(url.substring("jdbc:sqlite:".length())).getParent());
      }
      Flyway.configure()
          .dataSource(url, null, null)
          .locations("classpath:db/migration/" + dialect())
          .target("3")
          .load()
          .migrate();
      try (Connection c = fixture.connect();
          Statement s = c.createStatement()) {
        s.executeUpdate(
            "INSERT INTO run (run_id, agent, backend, runtime, status, command, created_at_ms,"
                + " started_at_ms, ended_at_ms, exit_status, end_reason, output_tail,"
                + " expires_at_ms, owner) VALUES ('old1', 'helper', 'docker', 'runsc', 'exited',"
                + " '[\"true\"]', 1000, 1100, 1200, 0, 'exit', 'done', 9000, 'cp-1')");
      }

      try (Store store = Store.open(url)) {
        RunRecord old = store.runs().find("old1").orElseThrow();
        assertThat(old.kind()).isEqualTo(RunKind.RUN);
        assertThat(old.idleSeconds()).isNull();
        assertThat(old.status()).isEqualTo(RunStatus.EXITED);
        assertThat(old.outputTail()).isEqualTo("done");
        assertThat(old.command().get(0).asText()).isEqualTo("true");

        RunRecord session = RunRepositoryContract.session("new1", StoreTestBase.START);
        store.runs().insert(session);
        store
            .runs()
            .update(
                session
                    .started("runsc", StoreTestBase.START)
                    .ended(RunStatus.CLOSED, StoreTestBase.START, null, "closed", ""));
        assertThat(store.runs().find("new1").orElseThrow().status()).isEqualTo(RunStatus.CLOSED);
        assertThat(store.runs().active()).isEmpty();
      }
    }
  }
}
