package dev.agentsandbox.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.AuditRow;
import dev.agentsandbox.testing.api.ApiClient.Answer;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every answer and audit row of governance, in full: the status, the error body field by field and
 * the audit data. Written against the answers governance gave before its refusals became domain
 * exceptions, so that the move changed nothing a client or an auditor sees. Fields are compared as
 * sets beyond {@code error} and {@code message} coming first, beside the {@code impact} added with
 * egress proposals (its shape is checked; {@code AdminApiContract} and the evidence tests check its
 * counts): the order of the others was never fixed (the error details were an unordered map), and
 * PostgreSQL's jsonb reorders audit data.
 */
class GovernanceAnswersTest {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final String CONFIG = "/api/admin/platform/agent-sandbox";
  private static final String FEATURE_PAGE_PUT =
      "{\"enabled\": true, \"agents\": {\"helper\": {\"allow\": [\"api.vendor.com\"]}}, \"reason\":"
          + " \"CHG-1042\"}";

  private static final String TWO_LOOSENINGS =
      "[{\"path\":\"enabled\",\"kind\":\"enabled_turned_on\",\"detail\":\"agent sandboxes turned"
          + " on\"},{\"path\":\"agents.helper\",\"kind\":\"agent_added\",\"detail\":\"agent"
          + " added\"}]";

  /** The configuration gained internal destinations: the default limit, and none per agent. */
  private static final String WIDEST = "\"internal_widest\":{\"ipv4\":24,\"ipv6\":64},";

  private static final String BEFORE =
      "{\"enabled\":false,\"backend\":\"auto\",\"require_runtime_class\":false,"
          + WIDEST
          + "\"agents\":{}}";
  private static final String AFTER =
      "{\"enabled\":true,\"backend\":\"auto\",\"require_runtime_class\":false,"
          + WIDEST
          + "\"agents\":"
          + "{\"helper\":{\"allow\":[\"api.vendor.com\"],\"image\":\"agent-sandbox/workload:latest\","
          + "\"resources\":{\"cpus\":1,\"memory_mb\":512,\"pids\":256},\"scope\":\"helper\","
          + "\"ttl_seconds\":900,\"credentials\":{},"
          + "\"outputs\":{\"max_bytes\":16777216,\"max_files\":100},\"internal\":{},\"warm\":0,"
          + "\"inspect\":{},\"sessions\":{\"max_file_bytes\":67108864,\"max_stdin_bytes\":262144}}}}";

  @TempDir Path dir;
  ApiFixture api;
  String admin;
  String configurer;

  @BeforeEach
  void start() throws Exception {
    api = new ApiFixture("jdbc:sqlite:" + dir.resolve("store.db"));
    admin = api.token("golden-admin", Scopes.ALL);
    configurer = api.token("golden-configurer", Set.of(Scopes.CONFIGURE, Scopes.READ));
  }

  @AfterEach
  void stop() {
    api.close();
  }

  /** A refused PUT: whether a version 1 exists first, the token, body, headers, and the answer. */
  record Refusal(
      boolean savedFirst,
      boolean asAdmin,
      String body,
      List<String> headers,
      int status,
      String answer) {}

  static Stream<Arguments> refusals() {
    return Stream.of(
        Arguments.of(
            "a body that is not an object is invalid_config",
            new Refusal(
                false,
                true,
                "[]",
                List.of(),
                400,
                "{\"error\":\"invalid_config\",\"message\":\"the body must be a JSON object\"}")),
        Arguments.of(
            "a negative version is invalid_config at the path version",
            new Refusal(
                false,
                true,
                "{\"version\": -1}",
                List.of(),
                400,
                "{\"error\":\"invalid_config\",\"message\":\"version: must be the whole number"
                    + " from GET (0 when nothing was saved yet)\",\"problems\":[{\"path\":"
                    + "\"version\",\"message\":\"must be a whole number\"}]}")),
        Arguments.of(
            "a fractional version is invalid_config",
            new Refusal(
                false,
                true,
                "{\"version\": 1.5}",
                List.of(),
                400,
                "{\"error\":\"invalid_config\",\"message\":\"version: must be the whole number"
                    + " from GET (0 when nothing was saved yet)\",\"problems\":[{\"path\":"
                    + "\"version\",\"message\":\"must be a whole number\"}]}")),
        Arguments.of(
            "a reason that is not a string is invalid_config at the path reason",
            new Refusal(
                false,
                true,
                "{\"reason\": 5}",
                List.of(),
                400,
                "{\"error\":\"invalid_config\",\"message\":\"reason: must be a string\","
                    + "\"problems\":[{\"path\":\"reason\",\"message\":\"must be a string\"}]}")),
        Arguments.of(
            "a reason over 1000 characters is invalid_config",
            new Refusal(
                false,
                true,
                "{\"reason\": \"" + "x".repeat(1001) + "\"}",
                List.of(),
                400,
                "{\"error\":\"invalid_config\",\"message\":\"reason: longer than 1000"
                    + " characters\",\"problems\":[{\"path\":\"reason\",\"message\":\"longer than"
                    + " 1000 characters\"}]}")),
        Arguments.of(
            "If-Match and a body version that disagree are invalid_request",
            new Refusal(
                false,
                true,
                "{\"version\": 0}",
                List.of("If-Match", "\"3\""),
                400,
                "{\"error\":\"invalid_request\",\"message\":\"If-Match says version 3 but the body"
                    + " says 0 (send one, or the same in both)\"}")),
        Arguments.of(
            "a wildcard If-Match is invalid_request",
            new Refusal(
                false,
                true,
                "{}",
                List.of("If-Match", "*"),
                400,
                "{\"error\":\"invalid_request\",\"message\":\"If-Match must be the ETag from GET,"
                    + " such as \\\"3\\\" (a wildcard * is refused: it would overwrite whatever is"
                    + " there)\"}")),
        Arguments.of(
            "an update without the version read is version_required",
            new Refusal(
                true,
                true,
                "{\"enabled\": false}",
                List.of(),
                428,
                "{\"error\":\"version_required\",\"message\":\"update agent-sandbox: send the"
                    + " version you read (If-Match: \\\"1\\\" or a \\\"version\\\" field) so that no"
                    + " one's change is silently overwritten\"}")),
        Arguments.of(
            "an update against an older version is version_conflict",
            new Refusal(
                true,
                true,
                "{\"enabled\": false, \"version\": 0}",
                List.of(),
                409,
                "{\"error\":\"version_conflict\",\"message\":\"update agent-sandbox: you sent"
                    + " version 0 but the current one is 1 (GET it again, re-apply your change and"
                    + " send the new version)\"}")),
        Arguments.of(
            "a weakening without governance.weaken is weakening_refused naming the scope",
            new Refusal(
                false,
                false,
                FEATURE_PAGE_PUT,
                List.of(),
                403,
                "{\"error\":\"weakening_refused\",\"message\":\"update agent-sandbox: the change"
                    + " loosens 2 things (enabled: agent sandboxes turned on; agents.helper: agent"
                    + " added) and needs the scope governance.weaken, which token"
                    + " 'golden-configurer' lacks\",\"loosenings\":"
                    + TWO_LOOSENINGS
                    + ",\"missing\":[\"governance.weaken\"],"
                    + "\"missing_scope\":\"governance.weaken\"}")),
        Arguments.of(
            "a weakening with neither scope nor reason names both",
            new Refusal(
                false,
                false,
                "{\"enabled\": true}",
                List.of(),
                403,
                "{\"error\":\"weakening_refused\",\"message\":\"update agent-sandbox: the change"
                    + " loosens 1 thing (enabled: agent sandboxes turned on) and needs the scope governance.weaken, which token"
                    + " 'golden-configurer' lacks and a non-empty \\\"reason\\\" (such as a change"
                    + " ticket)\",\"loosenings\":[{\"path\":\"enabled\",\"kind\":"
                    + "\"enabled_turned_on\",\"detail\":\"agent sandboxes turned on\"}],"
                    + "\"missing\":[\"governance.weaken\",\"reason\"],"
                    + "\"missing_scope\":\"governance.weaken\"}")),
        Arguments.of(
            "a weakening with the scope but a blank reason misses only the reason",
            new Refusal(
                false,
                true,
                "{\"enabled\": true, \"reason\": \"  \"}",
                List.of(),
                403,
                "{\"error\":\"weakening_refused\",\"message\":\"update agent-sandbox: the change"
                    + " loosens 1 thing (enabled: agent sandboxes turned on) and needs a non-empty \\\"reason\\\" (such as a change"
                    + " ticket)\",\"loosenings\":[{\"path\":\"enabled\",\"kind\":"
                    + "\"enabled_turned_on\",\"detail\":\"agent sandboxes turned on\"}],"
                    + "\"missing\":[\"reason\"]}")));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("refusals")
  void everyRefusalAnswersExactlyAsBefore(String name, Refusal refusal) throws IOException {
    if (refusal.savedFirst()) {
      assertThat(api.client.put(CONFIG, admin, FEATURE_PAGE_PUT).status()).isEqualTo(200);
    }
    Answer answer =
        api.client.put(
            CONFIG,
            refusal.asAdmin() ? admin : configurer,
            refusal.body(),
            refusal.headers().toArray(String[]::new));
    assertThat(answer.status()).as(answer.body()).isEqualTo(refusal.status());
    assertSameError(answer.body(), refusal.answer());
  }

  @Test
  void aRefusedWeakeningIsAuditedExactlyAsBefore() throws IOException {
    assertThat(api.client.put(CONFIG, configurer, FEATURE_PAGE_PUT).status()).isEqualTo(403);
    List<AuditRow> rows = rows("agent_sandbox.config.refused");
    assertThat(rows).hasSize(1);
    assertThat(rows.get(0).actor()).isEqualTo("golden-configurer");
    assertSameJson(
        rows.get(0).data().toString(),
        "{\"config\":\"agent-sandbox\",\"version\":0,\"before\":"
            + BEFORE
            + ","
            + "\"after\":"
            + AFTER
            + ",\"weakening\":true,\"loosenings\":"
            + TWO_LOOSENINGS
            + ",\"reason\":\"CHG-1042\",\"missing\":"
            + "[\"governance.weaken\"]}");
    assertThat(rows("agent_sandbox.config.update")).isEmpty();
  }

  @Test
  void anAcceptedWeakeningIsAnsweredAndAuditedExactlyAsBefore() throws IOException {
    Answer answer = api.client.put(CONFIG, admin, FEATURE_PAGE_PUT);
    assertThat(answer.status()).isEqualTo(200);
    JsonNode body = MAPPER.readTree(answer.body());
    assertSameJson(
        body.get("change").toString(),
        "{\"weakening\":true,\"loosenings\":" + TWO_LOOSENINGS + ",\"reason\":\"CHG-1042\"}");
    List<AuditRow> rows = rows("agent_sandbox.config.update");
    assertThat(rows).hasSize(1);
    assertThat(rows.get(0).actor()).isEqualTo("golden-admin");
    assertSameJson(
        rows.get(0).data().toString(),
        "{\"config\":\"agent-sandbox\",\"version\":1,\"before\":"
            + BEFORE
            + ","
            + "\"after\":"
            + AFTER
            + ",\"weakening\":true,\"loosenings\":"
            + TWO_LOOSENINGS
            + ",\"reason\":\"CHG-1042\"}");
    assertThat(rows("agent_sandbox.config.refused")).isEmpty();
  }

  private List<AuditRow> rows(String type) {
    return api.store.audit().query(new AuditQuery(type, null, null, null, null, 100));
  }

  /**
   * Equal as JSON values (the order of fields was never fixed beyond error and message), beside the
   * {@code impact} that every change, refusal and audit row of one has carried since egress
   * proposals: no egress is recorded here, so it names a seven-day window and zeros.
   */
  private static void assertSameJson(String actual, String expected) throws IOException {
    JsonNode tree = MAPPER.readTree(actual);
    if (tree.has("impact")) {
      JsonNode impact = tree.get("impact");
      assertThat(
              java.time.Duration.between(
                  java.time.Instant.parse(impact.get("since").asText()),
                  java.time.Instant.parse(impact.get("until").asText())))
          .isEqualTo(java.time.Duration.ofDays(7));
      assertThat(impact.get("agents").toString()).as(actual).doesNotContain(":1", ":2", ":3");
      ((com.fasterxml.jackson.databind.node.ObjectNode) tree).remove("impact");
    }
    assertThat(tree).as(actual).isEqualTo(MAPPER.readTree(expected));
  }

  /** An error body: as {@link #assertSameJson}, with {@code error} and {@code message} first. */
  private static void assertSameError(String actual, String expected) throws IOException {
    assertSameJson(actual, expected);
    List<String> names = new ArrayList<>();
    MAPPER.readTree(actual).fieldNames().forEachRemaining(names::add);
    assertThat(names.subList(0, 2)).as(actual).containsExactly("error", "message");
  }
}
