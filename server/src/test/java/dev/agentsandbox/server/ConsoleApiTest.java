package dev.agentsandbox.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.testing.api.ApiClient.Answer;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * What the console needs from the server, over real HTTP against a real SQLite store: its assets
 * with a strict Content-Security-Policy, the dry run of a configuration change, the audit chain's
 * verification and the backends' probes. The browser side is {@code ConsoleIT} in the cli module.
 */
class ConsoleApiTest {
  private static final String CONFIG = "/api/admin/platform/agent-sandbox";
  private static final String AUDIT = "/api/admin/platform/audit";
  private static final String LOOSENING =
      "{\"enabled\": true, \"agents\": {\"helper\": {\"allow\": [\"api.vendor.com\"]}}}";

  @TempDir Path dir;
  ApiFixture api;

  @BeforeEach
  void start() throws Exception {
    api = new ApiFixture("jdbc:sqlite:" + dir.resolve("store.db"));
  }

  @AfterEach
  void stop() {
    api.close();
  }

  static Stream<Arguments> assets() {
    return Stream.of(
        Arguments.of("/", "text/html; charset=utf-8", "<script type=\"module\""),
        Arguments.of("/console/app.js", "text/javascript; charset=utf-8", "import "),
        Arguments.of(
            "/console/events.js",
            "text/javascript; charset=utf-8",
            "EGRESS_DENY: \"agent_sandbox.egress.deny\""),
        Arguments.of("/console/console.css", "text/css; charset=utf-8", ":root"),
        Arguments.of("/console/icon.svg", "image/svg+xml", "<svg"));
  }

  @ParameterizedTest(name = "{0} is served as {1} under the strict policy")
  @MethodSource("assets")
  void assetsAreServedWithTheirTypeAStrictPolicyAndRevalidation(
      String path, String type, String content) {
    Answer answer = api.client.get(path, null);
    assertThat(answer.status()).isEqualTo(200);
    assertThat(answer.header("Content-Type")).isEqualTo(type);
    assertThat(answer.body()).contains(content);
    String csp = answer.header("Content-Security-Policy");
    assertThat(csp)
        .contains("default-src 'none'", "script-src 'self'", "style-src 'self'")
        .contains("frame-ancestors 'none'", "form-action 'none'", "base-uri 'none'")
        .doesNotContain("unsafe-inline", "unsafe-eval", "*", "data:", "http:");
    assertThat(answer.header("Cache-Control")).isEqualTo("no-cache");
    assertThat(answer.header("X-Content-Type-Options")).isEqualTo("nosniff");
    assertThat(answer.header("X-Frame-Options")).isEqualTo("DENY");
    String etag = answer.header("ETag");
    Answer again =
        api.client.send(api.client.builder(path, null).header("If-None-Match", etag).GET());
    assertThat(again.status()).isEqualTo(304);
    assertThat(again.body()).isEmpty();
  }

  @Test
  void thePageHasNoInlineScriptNorInlineStyle() {
    String page = api.client.get("/", null).body();
    assertThat(page).doesNotContainPattern("<script(?![^>]*\\bsrc=)[^>]*>");
    assertThat(page).doesNotContain("style=", "<style", "onclick", "onload", "javascript:");
  }

  static Stream<String> notAssets() {
    return Stream.of(
        "/console/..%2Fconsole%2Fapp.js",
        "/console/%2e%2e",
        "/console/assets.txt",
        "/console/App.js",
        "/console/missing.js",
        "/console/",
        "/console/dev/agentsandbox/server/ConsoleAssets.class");
  }

  @ParameterizedTest(name = "{0} is not served")
  @MethodSource("notAssets")
  void onlyTheListedAssetsAreServed(String path) {
    Answer answer = api.client.get(path, null);
    assertThat(answer.status()).isEqualTo(404);
    assertThat(answer.header("Content-Type")).isEqualTo("application/json");
  }

  @Test
  void aDryRunAnswersTheChangeAndStoresNothing() {
    String body = "{\"enabled\": false, \"agents\": {}, \"reason\": \"preview\"}";
    Answer answer =
        api.client.put(CONFIG + "?dry_run=true", api.configurer, body, "If-Match", "\"0\"");
    assertThat(answer.status()).as(answer.body()).isEqualTo(200);
    JsonNode change = answer.json().path("change");
    assertThat(change.path("dry_run").asBoolean()).isTrue();
    assertThat(change.path("weakening").asBoolean()).isFalse();
    assertThat(answer.json().path("version").asLong()).isZero();
    assertThat(api.client.get(CONFIG, api.reader).json().path("version").asLong()).isZero();
    assertThat(auditRows()).isEmpty();
  }

  @Test
  void aDryRunOfALooseningIsRefusedLikeTheSaveButNotAudited() {
    Answer answer =
        api.client.put(CONFIG + "?dry_run=true", api.configurer, LOOSENING, "If-Match", "\"0\"");
    assertThat(answer.status()).as(answer.body()).isEqualTo(403);
    assertThat(answer.json().path("error").asText()).isEqualTo("weakening_refused");
    assertThat(answer.json().path("missing_scope").asText()).isEqualTo("governance.weaken");
    assertThat(answer.json().path("loosenings").toString())
        .contains("enabled_turned_on", "agent_added");
    assertThat(auditRows()).as("a preview is not an attempt").isEmpty();

    Answer withScope =
        api.client.put(CONFIG + "?dry_run=true", api.admin, LOOSENING, "If-Match", "\"0\"");
    assertThat(withScope.status()).isEqualTo(403);
    assertThat(withScope.json().path("missing").toString()).isEqualTo("[\"reason\"]");
    assertThat(withScope.json().has("missing_scope")).isFalse();

    String reasoned = LOOSENING.replaceFirst("\\}$", ", \"reason\": \"CHG-7\"}");
    Answer allowed =
        api.client.put(CONFIG + "?dry_run=true", api.admin, reasoned, "If-Match", "\"0\"");
    assertThat(allowed.status()).as(allowed.body()).isEqualTo(200);
    assertThat(allowed.json().path("change").path("weakening").asBoolean()).isTrue();
    assertThat(api.client.get(CONFIG, api.reader).json().path("version").asLong()).isZero();
    assertThat(auditRows()).isEmpty();
  }

  @Test
  void aDryRunChecksTheVersionScopeAndParameter() {
    Answer saved = api.client.put(CONFIG, api.configurer, "{\"agents\": {}}", "If-Match", "\"0\"");
    assertThat(saved.status()).as(saved.body()).isEqualTo(200);
    Answer stale =
        api.client.put(CONFIG + "?dry_run=true", api.configurer, "{}", "If-Match", "\"0\"");
    assertThat(stale.status()).isEqualTo(409);
    assertThat(stale.json().path("error").asText()).isEqualTo("version_conflict");
    Answer reader = api.client.put(CONFIG + "?dry_run=true", api.reader, "{}", "If-Match", "\"1\"");
    assertThat(reader.status()).isEqualTo(403);
    assertThat(reader.json().path("missing_scope").asText()).isEqualTo("agent_sandbox.configure");
    Answer bad = api.client.put(CONFIG + "?dry_run=yes", api.configurer, "{}", "If-Match", "\"1\"");
    assertThat(bad.status()).isEqualTo(400);
    Answer unknown =
        api.client.put(CONFIG + "?dryrun=true", api.configurer, "{}", "If-Match", "\"1\"");
    assertThat(unknown.status()).isEqualTo(400);
    assertThat(api.client.get(CONFIG, api.reader).json().path("version").asLong()).isEqualTo(1);
  }

  @Test
  void verifyReportsTheChainAndItsHeadToAuditReadersOnly() throws Exception {
    api.client.put(CONFIG, api.configurer, "{\"agents\": {}}", "If-Match", "\"0\"");
    Answer ok = api.client.get(AUDIT + "/verify", api.auditor);
    assertThat(ok.status()).as(ok.body()).isEqualTo(200);
    assertThat(ok.json().path("ok").asBoolean()).isTrue();
    assertThat(ok.json().path("rows_checked").asLong()).isEqualTo(1);
    assertThat(ok.json().path("head").asText()).matches("1:[0-9a-f]{64}");
    assertThat(api.client.get(AUDIT + "/verify", api.reader).json().path("missing_scope").asText())
        .isEqualTo("audit.read");

    try (Connection db = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve("store.db"));
        Statement sql = db.createStatement()) {
      // As an attacker with DDL rights would: the append-only trigger goes first.
      sql.executeUpdate("DROP TRIGGER IF EXISTS audit_log_no_update");
      sql.executeUpdate("UPDATE audit_log SET actor = 'someone-else' WHERE id = 1");
    }
    Answer broken = api.client.get(AUDIT + "/verify", api.auditor);
    assertThat(broken.status()).isEqualTo(200);
    assertThat(broken.json().path("ok").asBoolean()).isFalse();
    assertThat(broken.json().path("problems").toString()).contains("1");
  }

  @Test
  void backendsListsEveryBackendProbedToReaders() {
    Answer answer = api.client.get(CONFIG + "/backends", api.reader);
    assertThat(answer.status()).isEqualTo(200);
    // This fixture's control plane has no backend; ConsoleIT shows a real Docker probe.
    assertThat(answer.json().path("backends").isArray()).isTrue();
    assertThat(answer.json().path("backends").size()).isZero();
    assertThat(api.client.get(CONFIG + "/backends", api.auditor).status()).isEqualTo(403);
  }

  private List<?> auditRows() {
    return api.store.audit().query(new AuditQuery(null, null, null, null, null, 100));
  }
}
