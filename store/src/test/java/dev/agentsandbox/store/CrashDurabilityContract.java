package dev.agentsandbox.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * docs/architecture.md invariant 10 at the store's level: a row whose append returned survives the
 * writing process being killed with SIGKILL at an arbitrary moment, and the chain is intact
 * afterwards.
 */
abstract class CrashDurabilityContract extends StoreTestBase {

  private static final int ROWS_BEFORE_KILL = 50;

  @Test
  void everyReturnedAppendSurvivesSigkill() throws Exception {
    String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    String classPath =
        System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    Process child =
        new ProcessBuilder(
                javaBin, "-cp", classPath, AppendUntilKilled.class.getName(), fixture.url())
            .redirectError(ProcessBuilder.Redirect.DISCARD)
            .start();
    List<String> acknowledged = new ArrayList<>();
    try (BufferedReader lines =
        new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while (acknowledged.size() < ROWS_BEFORE_KILL && (line = lines.readLine()) != null) {
        acknowledged.add(line);
      }
      // SIGKILL while it keeps appending: some append is in flight at this moment. Through the
      // handle, because Process.destroyForcibly() also closes the pipe we still read from.
      child.toHandle().destroyForcibly();
      assertThat(child.waitFor(60, TimeUnit.SECONDS)).isTrue();
      while ((line = lines.readLine()) != null) {
        acknowledged.add(line);
      }
    } finally {
      child.destroyForcibly();
    }

    assertThat(acknowledged).hasSizeGreaterThanOrEqualTo(ROWS_BEFORE_KILL);
    List<String> stored = new ArrayList<>();
    Long after = 0L;
    for (int page = 0; page < 1000; page++) {
      List<AuditRow> rows =
          store.audit().query(new AuditQuery(null, null, null, null, after, 1000));
      if (rows.isEmpty()) {
        break;
      }
      rows.forEach(row -> stored.add(row.id() + " " + row.hash()));
      after = rows.get(rows.size() - 1).id();
    }
    assertThat(stored).containsAll(acknowledged);
    VerifyResult result = store.audit().verify();
    assertThat(result.ok()).as("verify after the crash: %s", result.problems()).isTrue();
    assertThat(result.rowsChecked()).isEqualTo(stored.size());
  }
}
