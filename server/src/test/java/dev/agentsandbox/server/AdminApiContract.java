package dev.agentsandbox.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.AuditRow;
import dev.agentsandbox.testing.api.ApiClient.Answer;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The admin API driven over real HTTP against a real store; subclasses choose the store (SQLite or
 * PostgreSQL).
 */
abstract class AdminApiContract {
  static final String CONFIG = "/api/admin/platform/agent-sandbox";
  static final String EGRESS = "/api/admin/platform/egress-policy";
  static final String AUDIT = "/api/admin/platform/audit";

  /** The feature page's PUT body, verbatim. */
  static final String FEATURE_PAGE_PUT =
      "{\"enabled\": true, \"agents\": {\"helper\": {\"allow\": [\"api.vendor.com\"]}}, \"reason\":"
          + " \"CHG-1042\"}";

  ApiFixture api;
  CapturedLogs logs;

  abstract String newStoreUrl() throws Exception;

  void dropStore() throws Exception {}

  @BeforeEach
  void start() throws Exception {
    logs = CapturedLogs.attach();
    api = new ApiFixture(newStoreUrl());
  }

  @AfterEach
  void stop() throws Exception {
    logs.detach();
    if (api != null) {
      api.close();
    }
    dropStore();
  }

  List<AuditRow> audit(String typePrefix) {
    return api.store.audit().query(new AuditQuery(typePrefix, null, null, null, null, 1000));
  }

  static List<String> texts(JsonNode array) {
    return StreamSupport.stream(array.spliterator(), false).map(JsonNode::asText).toList();
  }

  // ---- health, readiness, metrics ----

  @Test
  void healthReadinessAndMetricsArePublic() {
    assertThat(api.client.get("/healthz", null).status()).isEqualTo(200);
    Answer ready = api.client.get("/readyz", null);
    assertThat(ready.status()).isEqualTo(200);
    assertThat(ready.json().get("store").asText()).isEqualTo(api.store.dialect());
    api.client.get(CONFIG, api.reader);
    Answer metrics = api.client.get("/metrics", null);
    assertThat(metrics.status()).isEqualTo(200);
    assertThat(metrics.header("Content-Type")).startsWith("text/plain");
    assertThat(metrics.body())
        .contains(
            "agent_sandbox_http_requests_total{method=\"GET\",route=\""
                + CONFIG
                + "\",status=\"200\"} 1");
  }

  // ---- authentication and scopes ----

  @Test
  void missingTokenIs401() {
    Answer answer = api.client.get(CONFIG, null);
    assertThat(answer.status()).isEqualTo(401);
    assertThat(answer.json().get("error").asText()).isEqualTo("missing_token");
    assertThat(answer.header("WWW-Authenticate")).startsWith("Bearer");
  }

  @Test
  void nonBearerAuthorizationIs401() {
    Answer answer =
        api.client.send(
            api.client.builder(CONFIG, null).header("Authorization", "Basic YTpi").GET());
    assertThat(answer.status()).isEqualTo(401);
    assertThat(answer.json().get("error").asText()).isEqualTo("missing_token");
  }

  @Test
  void unknownTokenIs401() {
    Answer answer = api.client.get(CONFIG, "asb_" + "A".repeat(43));
    assertThat(answer.status()).isEqualTo(401);
    assertThat(answer.json().get("error").asText()).isEqualTo("invalid_token");
  }

  @Test
  void revokedTokenIs401() {
    String secret = api.token("short-lived", Set.of(Scopes.READ));
    assertThat(api.client.get(CONFIG, secret).status()).isEqualTo(200);
    api.store.tokens().revoke("short-lived");
    assertThat(api.client.get(CONFIG, secret).json().get("error").asText())
        .isEqualTo("invalid_token");
  }

  @Test
  void expiredTokenIs401() {
    String secret =
        api.store
            .tokens()
            .create("expiring", Set.of(Scopes.READ), api.clock.instant().plus(Duration.ofHours(1)))
            .secret();
    api.secrets.add(secret);
    assertThat(api.client.get(CONFIG, secret).status()).isEqualTo(200);
    api.clock.advance(Duration.ofHours(2));
    Answer answer = api.client.get(CONFIG, secret);
    assertThat(answer.status()).isEqualTo(401);
    assertThat(answer.json().get("error").asText()).isEqualTo("invalid_token");
  }

  @Test
  void missingScopeIs403NamingIt() {
    Answer answer = api.client.put(CONFIG, api.reader, "{\"enabled\": false}");
    assertThat(answer.status()).isEqualTo(403);
    assertThat(answer.json().get("error").asText()).isEqualTo("missing_scope");
    assertThat(answer.json().get("missing_scope").asText()).isEqualTo(Scopes.CONFIGURE);
    assertThat(answer.json().get("message").asText()).contains(Scopes.CONFIGURE);
    Answer audit = api.client.get(AUDIT, api.reader);
    assertThat(audit.json().get("missing_scope").asText()).isEqualTo(Scopes.AUDIT_READ);
  }

  // ---- request shape ----

  @Test
  void theFeaturePageCurlCommandWorksAsWritten() throws Exception {
    // The feature page's step 3, run with the real curl: -d without -H labels the body
    // application/x-www-form-urlencoded.
    Process curl =
        new ProcessBuilder(
                "curl",
                "-sS",
                "-X",
                "PUT",
                api.server.baseUrl() + CONFIG,
                "-H",
                "Authorization: Bearer " + api.admin,
                "-d",
                FEATURE_PAGE_PUT,
                "-w",
                "\n%{http_code}")
            .redirectErrorStream(true)
            .start();
    String out = new String(curl.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(curl.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(out.strip()).as(out).endsWith("200");
    assertThat(audit("agent_sandbox.config.update")).hasSize(1);
  }

  @Test
  void otherMediaTypesAndFormDataAre415WithAHint() {
    for (String[] typeAndBody :
        new String[][] {
          {"text/plain", FEATURE_PAGE_PUT},
          {"application/x-www-form-urlencoded", "enabled=true&reason=x"},
          {"multipart/form-data; boundary=x", FEATURE_PAGE_PUT}
        }) {
      Answer answer =
          api.client.send(
              api.client
                  .builder(CONFIG, api.admin)
                  .header("Content-Type", typeAndBody[0])
                  .PUT(HttpRequest.BodyPublishers.ofString(typeAndBody[1])));
      assertThat(answer.status()).as(typeAndBody[0]).isEqualTo(415);
      assertThat(answer.json().get("error").asText()).isEqualTo("unsupported_media_type");
      assertThat(answer.json().get("message").asText()).contains("Content-Type: application/json");
    }
    assertThat(audit("agent_sandbox.config")).isEmpty();
  }

  @Test
  void overLargeBodyIs413() {
    String big = "{\"reason\": \"" + "x".repeat(1024 * 1024) + "\"}";
    Answer answer = api.client.put(CONFIG, api.admin, big);
    assertThat(answer.status()).isEqualTo(413);
    assertThat(answer.json().get("error").asText()).isEqualTo("body_too_large");
  }

  @Test
  void malformedAndDuplicateFieldJsonAre400() {
    Answer broken = api.client.put(CONFIG, api.admin, "{\"enabled\": tru");
    assertThat(broken.status()).isEqualTo(400);
    assertThat(broken.json().get("error").asText()).isEqualTo("malformed_json");
    Answer duplicate =
        api.client.put(
            CONFIG, api.admin, "{\"enabled\": false, \"enabled\": true, \"reason\": \"x\"}");
    assertThat(duplicate.status()).isEqualTo(400);
    assertThat(duplicate.json().get("message").asText()).contains("a field appears twice");
  }

  @Test
  void validationReturnsEveryProblemWithItsPath() {
    Answer answer =
        api.client.put(
            CONFIG,
            api.admin,
            "{\"agents\": {\"helper\": {\"allow\": [\"a.example.com\", \"b.example.com\", \"*\","
                + " \"10.0.0.1\"], \"ttl_seconds\": 99999, \"colour\": 1}}, \"backend\": \"qemu\"}");
    assertThat(answer.status()).isEqualTo(400);
    JsonNode body = answer.json();
    assertThat(body.get("error").asText()).isEqualTo("invalid_config");
    List<String> problems = new ArrayList<>();
    body.get("problems")
        .forEach(p -> problems.add(p.get("path").asText() + ": " + p.get("message").asText()));
    assertThat(problems)
        .contains("agents.helper.allow[2]: a bare * is refused")
        .anyMatch(p -> p.startsWith("agents.helper.allow[3]: IP addresses are refused"))
        .anyMatch(p -> p.startsWith("agents.helper.ttl_seconds: must be from 1 to 14400"))
        .anyMatch(p -> p.startsWith("agents.helper.colour: unknown field"))
        .anyMatch(p -> p.startsWith("backend: 'qemu' is not a backend"));
  }

  @Test
  void unknownPathIs404AndWrongMethodIs405() {
    assertThat(
            api.client.get("/api/admin/platform/nothing", api.admin).json().get("error").asText())
        .isEqualTo("not_found");
    Answer wrong = api.client.send(api.client.builder(CONFIG, api.admin).DELETE());
    assertThat(wrong.status()).isEqualTo(405);
    assertThat(wrong.header("Allow")).isEqualTo("GET, PUT");
  }

  // ---- governance ----

  @Test
  void featurePagePutIsRefusedWithoutGovernanceWeaken() {
    Answer answer = api.client.put(CONFIG, api.configurer, FEATURE_PAGE_PUT);
    assertThat(answer.status()).isEqualTo(403);
    JsonNode body = answer.json();
    assertThat(body.get("error").asText()).isEqualTo("weakening_refused");
    assertThat(body.get("missing_scope").asText()).isEqualTo(Scopes.GOVERNANCE_WEAKEN);
    assertThat(body.get("message").asText()).contains(Scopes.GOVERNANCE_WEAKEN);
    assertThat(
            texts(
                body.get("loosenings").findValues("kind").stream()
                    .collect(
                        com.fasterxml.jackson.databind.node.JsonNodeFactory.instance::arrayNode,
                        com.fasterxml.jackson.databind.node.ArrayNode::add,
                        com.fasterxml.jackson.databind.node.ArrayNode::addAll)))
        .containsExactly("enabled_turned_on", "agent_added");
    List<AuditRow> refused = audit("agent_sandbox.config.refused");
    assertThat(refused).hasSize(1);
    assertThat(refused.get(0).data().get("reason").asText()).isEqualTo("CHG-1042");
    assertThat(texts(refused.get(0).data().get("missing")))
        .containsExactly(Scopes.GOVERNANCE_WEAKEN);
    assertThat(audit("agent_sandbox.config.update")).isEmpty();
    assertThat(api.client.get(CONFIG, api.reader).json().get("version").asLong()).isZero();
  }

  @Test
  void featurePagePutIsAcceptedWithGovernanceWeakenAndAuditedAsAWeakening() {
    Answer answer = api.client.put(CONFIG, api.admin, FEATURE_PAGE_PUT);
    assertThat(answer.status()).isEqualTo(200);
    assertThat(answer.header("ETag")).isEqualTo("\"1\"");
    JsonNode body = answer.json();
    assertThat(body.get("version").asLong()).isEqualTo(1);
    assertThat(body.get("enabled").asBoolean()).isTrue();
    assertThat(texts(body.at("/agents/helper/effective_allow"))).containsExactly("api.vendor.com");
    assertThat(body.at("/change/weakening").asBoolean()).isTrue();

    List<AuditRow> updates = audit("agent_sandbox.config.update");
    assertThat(updates).hasSize(1);
    AuditRow row = updates.get(0);
    assertThat(row.actor()).startsWith("admin-");
    JsonNode data = row.data();
    assertThat(data.get("weakening").asBoolean()).isTrue();
    assertThat(data.get("reason").asText()).isEqualTo("CHG-1042");
    assertThat(data.at("/before/enabled").asBoolean()).isFalse();
    assertThat(data.at("/before/agents").isEmpty()).isTrue();
    assertThat(data.at("/after/enabled").asBoolean()).isTrue();
    assertThat(texts(data.at("/after/agents/helper/allow"))).containsExactly("api.vendor.com");
    assertThat(data.get("loosenings").findValuesAsText("kind"))
        .containsExactly("enabled_turned_on", "agent_added");
  }

  @Test
  void aWeakeningWithTheScopeButNoReasonIsRefused() {
    Answer answer = api.client.put(CONFIG, api.admin, "{\"enabled\": true, \"reason\": \"   \"}");
    assertThat(answer.status()).isEqualTo(403);
    assertThat(texts(answer.json().get("missing"))).containsExactly("reason");
    assertThat(answer.json().has("missing_scope")).isFalse();
  }

  /**
   * A reason is shown in the audit log, the CLI's terminal and the console. Each row is a reason
   * that would make it say something else there than what was stored; each is refused with 400
   * naming the character by its code point, on both governed documents, and nothing is saved or
   * audited.
   */
  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "ESC: a colour escape hides the ticket | CHG-1042 \\u001b[8mhidden | U+001B",
        "OSC 52: sets the reader's clipboard | CHG-1042\\u001b]52;c;cm0gLXJmIH4=\\u0007 | U+001B",
        "BEL ends an OSC sequence | CHG\\u0007-1042 | U+0007",
        "a line feed forges a second audit line | CHG-1042\\napproved by security | U+000A",
        "a carriage return overwrites the line | looks fine\\rCHG-1042 | U+000D",
        "C1 CSI: an 8-bit escape | CHG-1042 \\u009b31m | U+009B",
        "right-to-left override reorders the rest | CHG-1042 \\u202eveiver on | U+202E",
        "right-to-left isolate | CHG \\u2067x\\u2069 | U+2067",
        "zero-width space: a ticket that looks like CHG-1042 | CHG-10\\u200b42 | U+200B",
        "byte order mark | \\ufeffCHG-1042 | U+FEFF",
        "line separator | CHG-1042\\u2028approved | U+2028",
      })
  void aReasonThatWouldDisguiseItselfIsRefused(String why, String escaped, String named)
      throws Exception {
    String reason = unescapeJava(escaped);
    for (String[] document :
        new String[][] {
          {CONFIG, "{\"enabled\": true, \"reason\": %s}"},
          {EGRESS, "{\"scopes\": {}, \"default\": \"unrestricted\", \"reason\": %s}"}
        }) {
      String body =
          String.format(
              document[1],
              new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(reason));
      Answer answer = api.client.put(document[0], api.admin, body);
      assertThat(answer.status()).as(why + " on " + document[0]).isEqualTo(400);
      assertThat(answer.json().path("error").asText()).isEqualTo("invalid_config");
      assertThat(answer.json().path("message").asText())
          .startsWith("reason: contains " + named)
          .doesNotContain(reason);
      assertThat(answer.json().path("problems").get(0).path("path").asText()).isEqualTo("reason");
    }
    assertThat(api.client.get(CONFIG, api.admin).json().path("version").asLong()).isZero();
    assertThat(audit("agent_sandbox.config")).as("nothing audited").isEmpty();
  }

  /** The table's escapes ({@code \\uXXXX}, {@code \\n}, {@code \\r}) as the characters. */
  private static String unescapeJava(String escaped) {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < escaped.length(); i++) {
      char c = escaped.charAt(i);
      if (c == '\\' && i + 1 < escaped.length()) {
        char next = escaped.charAt(i + 1);
        if (next == 'u') {
          out.append((char) Integer.parseInt(escaped.substring(i + 2, i + 6), 16));
          i += 5;
          continue;
        }
        if (next == 'n' || next == 'r') {
          out.append(next == 'n' ? '\n' : '\r');
          i++;
          continue;
        }
      }
      out.append(c);
    }
    return out.toString();
  }

  @Test
  void aReasonInAnotherScriptOrWithAnEmojiIsKept() {
    Answer saved =
        api.client.put(CONFIG, api.admin, "{\"enabled\": true, \"reason\": \"تغيير CHG-1042 ✅\"}");
    assertThat(saved.status()).as(saved.body()).isEqualTo(200);
    assertThat(audit("agent_sandbox.config.update").get(0).data().path("reason").asText())
        .isEqualTo("تغيير CHG-1042 ✅");
  }

  @Test
  void tighteningNeedsOnlyConfigureAndItsReasonIsRecorded() {
    assertThat(
            api.client
                .put(
                    CONFIG,
                    api.admin,
                    "{\"enabled\": true, \"agents\": {\"helper\": {\"allow\": [\"api.vendor.com\","
                        + " \"*.cdn.example.com\"]}}, \"reason\": \"CHG-1\"}")
                .status())
        .isEqualTo(200);
    Answer tighten =
        api.client.put(
            CONFIG,
            api.configurer,
            "{\"enabled\": true, \"agents\": {\"helper\": {\"allow\": [\"img.cdn.example.com\"],"
                + " \"ttl_seconds\": 60}}, \"reason\": \"drop the vendor\"}",
            "If-Match",
            "\"1\"");
    assertThat(tighten.status()).isEqualTo(200);
    assertThat(tighten.json().at("/change/weakening").asBoolean()).isFalse();
    AuditRow row = audit("agent_sandbox.config.update").get(1);
    assertThat(row.data().get("weakening").asBoolean()).isFalse();
    assertThat(row.data().get("reason").asText()).isEqualTo("drop the vendor");
    assertThat(row.data().get("loosenings").isEmpty()).isTrue();
  }

  @Test
  void aLooseningSplitIntoRemoveThenReAddIsStillCaught() {
    api.client.put(CONFIG, api.admin, FEATURE_PAGE_PUT);
    // Removing the agent is a tightening, so configure suffices...
    Answer removed =
        api.client.put(
            CONFIG, api.configurer, "{\"enabled\": true, \"agents\": {}}", "If-Match", "\"1\"");
    assertThat(removed.status()).isEqualTo(200);
    // ...but adding it back, wider than before, is compared with what is there now: refused.
    Answer readded =
        api.client.put(
            CONFIG,
            api.configurer,
            "{\"enabled\": true, \"agents\": {\"helper\": {\"allow\": [\"*.vendor.com\"]}},"
                + " \"reason\": \"sneaky\"}",
            "If-Match",
            "\"2\"");
    assertThat(readded.status()).isEqualTo(403);
    assertThat(readded.json().get("loosenings").findValuesAsText("kind"))
        .containsExactly("agent_added");
  }

  @Test
  void aNarrowerInspectionRuleIsATighteningAndAnInjectionAWeakening() {
    String agent =
        "{%s\"enabled\": true, \"agents\": {\"helper\": {\"allow\": [\"api.github.com\"],"
            + " \"credentials\": {\"github\": {\"source\": \"run-token\"}},"
            + " \"inspect\": {\"api.github.com\": %s}}}}";
    Answer first =
        api.client.put(
            CONFIG,
            api.admin,
            String.format(
                agent, "\"reason\": \"CHG-1\", ", "{\"rules\": [\"GET,HEAD /repos/acme/**\"]}"));
    assertThat(first.status()).as(first.body()).isEqualTo(200);
    assertThat(first.json().at("/agents/helper/inspect/api.github.com/rules/0").asText())
        .isEqualTo("GET,HEAD /repos/acme/**");
    // Narrowing the rule lets less through: configure alone suffices.
    Answer narrowed =
        api.client.put(
            CONFIG,
            api.configurer,
            String.format(agent, "", "{\"rules\": [\"GET /repos/acme/widgets/**\"]}"),
            "If-Match",
            "\"1\"");
    assertThat(narrowed.status()).as(narrowed.body()).isEqualTo(200);
    // Injecting the credential sets it on every request to the host: a weakening.
    Answer injected =
        api.client.put(
            CONFIG,
            api.configurer,
            String.format(
                agent,
                "",
                "{\"rules\": [\"GET /repos/acme/widgets/**\"], \"credential\": \"github\"}"),
            "If-Match",
            "\"2\"");
    assertThat(injected.status()).isEqualTo(403);
    assertThat(injected.json().get("loosenings").findValuesAsText("kind"))
        .containsExactly("injection_added");
    assertThat(injected.json().get("loosenings").findValuesAsText("path"))
        .containsExactly("agents.helper.inspect[\"api.github.com\"].credential");
  }

  @Test
  void anInspectedHostThatIsNotAllowedIsRefusedAtItsPath() {
    Answer answer =
        api.client.put(
            CONFIG,
            api.admin,
            "{\"agents\": {\"helper\": {\"allow\": [\"pypi.org\"],"
                + " \"inspect\": {\"*.github.com\": {}, \"api.github.com\": {\"rules\":"
                + " [\"GET repos\"]}}}}}");
    assertThat(answer.status()).isEqualTo(400);
    assertThat(answer.json().get("problems").findValuesAsText("path"))
        .containsExactlyInAnyOrder(
            "agents.helper.inspect[\"*.github.com\"]", "agents.helper.inspect[\"api.github.com\"]");
  }

  @Test
  void movingAnAgentToAnUnrestrictedScopeIsALoosening() {
    api.client.put(
        EGRESS, api.admin, "{\"scopes\": {\"helper\": {\"allow\": [\"api.vendor.com\"]}}}");
    api.client.put(CONFIG, api.admin, FEATURE_PAGE_PUT);
    Answer moved =
        api.client.put(
            CONFIG,
            api.configurer,
            "{\"enabled\": true, \"agents\": {\"helper\": {\"allow\": [\"api.vendor.com\"],"
                + " \"scope\": \"elsewhere\"}}}",
            "If-Match",
            "\"1\"");
    assertThat(moved.status()).isEqualTo(403);
    assertThat(moved.json().get("loosenings").findValuesAsText("kind"))
        .containsExactly("scope_changed");
  }

  // ---- versions ----

  @Test
  void anUpdateOfAnExistingConfigNeedsTheVersion() {
    api.client.put(CONFIG, api.admin, FEATURE_PAGE_PUT);
    Answer answer = api.client.put(CONFIG, api.admin, "{\"enabled\": false}");
    assertThat(answer.status()).isEqualTo(428);
    assertThat(answer.json().get("error").asText()).isEqualTo("version_required");
  }

  @Test
  void twoAdminsNeverSilentlyOverwriteEachOther() {
    api.client.put(CONFIG, api.admin, FEATURE_PAGE_PUT);
    String etag = api.client.get(CONFIG, api.reader).header("ETag");
    // Both read version 1; the first to save wins, the second is told.
    Answer first =
        api.client.put(
            CONFIG, api.configurer, "{\"enabled\": true, \"agents\": {}}", "If-Match", etag);
    Answer second =
        api.client.put(
            CONFIG,
            api.admin,
            "{\"enabled\": true, \"version\": 1, \"agents\": {\"helper\": {\"allow\": []}}}");
    assertThat(first.status()).isEqualTo(200);
    assertThat(second.status()).isEqualTo(409);
    assertThat(second.json().get("error").asText()).isEqualTo("version_conflict");
    assertThat(api.client.get(CONFIG, api.reader).json().get("agents").isEmpty()).isTrue();
  }

  @Test
  void ifMatchAndBodyVersionMustAgreeAndWildcardIsRefused() {
    Answer disagree = api.client.put(CONFIG, api.admin, "{\"version\": 0}", "If-Match", "\"3\"");
    assertThat(disagree.status()).isEqualTo(400);
    Answer wildcard = api.client.put(CONFIG, api.admin, "{}", "If-Match", "*");
    assertThat(wildcard.status()).isEqualTo(400);
    assertThat(wildcard.json().get("message").asText()).contains("wildcard");
  }

  // ---- instance egress policy ----

  @Test
  void egressPolicyNarrowsTheEffectiveAllowListAndIsGoverned() {
    api.client.put(
        CONFIG,
        api.admin,
        "{\"enabled\": true, \"agents\": {\"helper\": {\"allow\": [\"*.vendor.com\","
            + " \"db.example.com:5432\"]}}, \"reason\": \"CHG-7\"}");
    assertThat(
            texts(api.client.get(CONFIG, api.reader).json().at("/agents/helper/effective_allow")))
        .containsExactly("*.vendor.com", "db.example.com:5432");

    // Unrestricted -> a list is a tightening: configure is enough.
    Answer narrow =
        api.client.put(
            EGRESS,
            api.configurer,
            "{\"scopes\": {\"helper\": {\"allow\": [\"api.vendor.com\"]}}, \"default\": {\"allow\":"
                + " []}}");
    assertThat(narrow.status()).isEqualTo(200);
    assertThat(narrow.json().at("/change/weakening").asBoolean()).isFalse();
    JsonNode config = api.client.get(CONFIG, api.reader).json();
    assertThat(texts(config.at("/agents/helper/allow")))
        .containsExactly("*.vendor.com", "db.example.com:5432");
    assertThat(texts(config.at("/agents/helper/effective_allow")))
        .containsExactly("api.vendor.com");

    // A list -> unrestricted loosens: refused without governance.weaken, audited.
    Answer loosen =
        api.client.put(
            EGRESS,
            api.configurer,
            "{\"scopes\": {\"helper\": \"unrestricted\"}, \"default\": {\"allow\": []}, \"version\": 1,"
                + " \"reason\": \"CHG-8\"}");
    assertThat(loosen.status()).isEqualTo(403);
    assertThat(loosen.json().get("loosenings").findValuesAsText("kind"))
        .containsExactly("egress_unrestricted");
    AuditRow refused = audit("agent_sandbox.config.refused").get(0);
    assertThat(refused.data().get("config").asText()).isEqualTo("egress-policy");

    Answer allowed =
        api.client.put(
            EGRESS,
            api.admin,
            "{\"scopes\": {\"helper\": \"unrestricted\"}, \"default\": {\"allow\": []}, \"version\": 1,"
                + " \"reason\": \"CHG-8\"}");
    assertThat(allowed.status()).isEqualTo(200);
    assertThat(allowed.json().get("scopes").get("helper").asText()).isEqualTo("unrestricted");
    AuditRow update = audit("agent_sandbox.config.update").get(2);
    assertThat(update.data().get("config").asText()).isEqualTo("egress-policy");
    assertThat(update.data().get("weakening").asBoolean()).isTrue();
  }

  // ---- audit ----

  @Test
  void auditQueryFiltersByTypePrefixSinceAfterIdAndLimit() {
    api.client.put(CONFIG, api.configurer, FEATURE_PAGE_PUT); // refused
    api.client.put(CONFIG, api.admin, FEATURE_PAGE_PUT); // accepted
    api.store
        .audit()
        .append(
            new dev.agentsandbox.store.AuditEvent(
                "agent_sandbox.egress.deny",
                "proxy",
                "helper",
                "run-1",
                com.fasterxml.jackson.databind.node.JsonNodeFactory.instance
                    .objectNode()
                    .put("host", "evil.example")));

    JsonNode all = api.client.get(AUDIT, api.auditor).json();
    assertThat(all.get("rows")).hasSize(3);
    assertThat(api.client.get(AUDIT + "?type=agent_sandbox.config", api.auditor).json().get("rows"))
        .hasSize(2);
    assertThat(
            api.client
                .get(AUDIT + "?type=agent_sandbox.egress", api.auditor)
                .json()
                .get("rows")
                .get(0)
                .get("type")
                .asText())
        .isEqualTo("agent_sandbox.egress.deny");
    assertThat(api.client.get(AUDIT + "?agent=helper&run=run-1", api.auditor).json().get("rows"))
        .hasSize(1);
    assertThat(api.client.get(AUDIT + "?run=run-2", api.auditor).json().get("rows")).isEmpty();
    long firstId = all.get("rows").get(0).get("id").asLong();
    JsonNode page = api.client.get(AUDIT + "?after_id=" + firstId + "&limit=1", api.auditor).json();
    assertThat(page.get("rows")).hasSize(1);
    assertThat(page.get("rows").get(0).get("id").asLong()).isEqualTo(firstId + 1);
    assertThat(page.get("next_after_id").asLong()).isEqualTo(firstId + 1);
    Instant future = api.clock.instant().plus(Duration.ofDays(1));
    assertThat(api.client.get(AUDIT + "?since=" + future, api.auditor).json().get("rows"))
        .isEmpty();
    assertThat(api.client.get(AUDIT + "?since=1h", api.auditor).json().get("rows")).hasSize(3);

    assertThat(api.client.get(AUDIT + "?limit=0", api.auditor).status()).isEqualTo(400);
    assertThat(api.client.get(AUDIT + "?since=yesterday", api.auditor).status()).isEqualTo(400);
    Answer unknown = api.client.get(AUDIT + "?typ=x", api.auditor);
    assertThat(unknown.status()).isEqualTo(400);
    assertThat(unknown.json().get("message").asText()).contains("unknown query parameter 'typ'");
  }

  @Test
  void auditExportIsJsonLines() {
    api.client.put(CONFIG, api.admin, FEATURE_PAGE_PUT);
    api.client.put(CONFIG, api.admin, "{\"enabled\": false, \"version\": 1}");
    Answer export = api.client.get(AUDIT + "/export?type=agent_sandbox.config", api.auditor);
    assertThat(export.status()).isEqualTo(200);
    assertThat(export.header("Content-Type")).isEqualTo("application/x-ndjson");
    String[] lines = export.body().split("\n");
    assertThat(lines).hasSize(2);
    assertThat(lines[1])
        .contains("\"type\":\"agent_sandbox.config.update\"")
        .contains("\"prev_hash\"");
  }

  @Test
  void noTokenAppearsInAnyAuditRowOrLogLine() {
    api.client.put(CONFIG, api.configurer, FEATURE_PAGE_PUT);
    api.client.put(CONFIG, api.admin, FEATURE_PAGE_PUT);
    api.client.get(CONFIG, "asb_" + "B".repeat(43));
    api.client.put(CONFIG, api.reader, "{}");
    String everything = api.client.get(AUDIT + "/export", api.auditor).body();
    List<String> logLines = logs.lines();
    assertThat(logLines).anyMatch(line -> line.contains(CONFIG));
    for (String secret : api.secrets) {
      assertThat(everything).doesNotContain(secret);
      assertThat(logLines).noneMatch(line -> line.contains(secret));
    }
    assertThat(logLines).noneMatch(line -> line.contains("BBBBBBBB"));
  }
}
