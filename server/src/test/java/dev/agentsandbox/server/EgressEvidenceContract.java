package dev.agentsandbox.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.store.AuditEvent;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.AuditRow;
import dev.agentsandbox.testing.api.ApiClient.Answer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Egress proposals and the impact of a change over real HTTP on a real store, from egress rows
 * appended as a run's recorder appends them; every exchange checked against openapi.json.
 * Subclasses choose the store.
 */
abstract class EgressEvidenceContract {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String CONFIG = "/api/admin/platform/agent-sandbox";
  static final String EGRESS = "/api/admin/platform/egress-policy";
  static final String PROPOSAL = CONFIG + "/agents/planner/egress-proposal";

  ApiFixture api;

  abstract String newStoreUrl() throws Exception;

  void dropStore() throws Exception {}

  @BeforeEach
  void start() throws Exception {
    api = new ApiFixture(newStoreUrl());
    Answer saved =
        api.client.put(
            CONFIG,
            api.admin,
            "{\"enabled\": true, \"reason\": \"setup\", \"agents\": {"
                + "\"planner\": {\"allow\": [\"api.vendor.com\", \"pypi.org\"]},"
                + "\"helper\": {\"allow\": [\"pypi.org\"]}}}");
    assertThat(saved.status()).as(saved.body()).isEqualTo(200);
  }

  @AfterEach
  void stop() throws Exception {
    if (api != null) {
      api.close();
    }
    dropStore();
  }

  void deny(String agent, String run, String host, int port, String reason) {
    api.store
        .audit()
        .append(
            new AuditEvent(
                "agent_sandbox.egress.deny",
                "proxy",
                agent,
                run,
                JSON.createObjectNode()
                    .put("host", host)
                    .put("port", port)
                    .put("reason", reason)
                    .put("method", "CONNECT")));
  }

  void allowed(String agent, String run, String host, int port) {
    api.store
        .audit()
        .append(
            new AuditEvent(
                "agent_sandbox.egress.allow",
                "proxy",
                agent,
                run,
                JSON.createObjectNode()
                    .put("host", host)
                    .put("port", port)
                    .put("reason", "allowed")
                    .put("first", true)));
  }

  JsonNode get(String path, String token) {
    Answer answer = api.client.get(path, token);
    assertThat(answer.status()).as(answer.body()).isEqualTo(200);
    return answer.json();
  }

  List<AuditRow> rows(String type) {
    return api.store.audit().query(new AuditQuery(type, null, null, null, null, 1000));
  }

  static List<String> texts(JsonNode array) {
    List<String> texts = new ArrayList<>();
    array.forEach(n -> texts.add(n.asText()));
    return texts;
  }

  @Test
  void aProposalNamesTheEntriesTheRefusalsCallForWithTheirEvidence() {
    for (String run : List.of("r1", "r2", "r3")) {
      deny("planner", run, "files.pythonhosted.org", 443, "not-allowed");
    }
    deny("planner", "r1", "a.cdn.example.com", 443, "not-allowed");
    deny("planner", "r2", "b.cdn.example.com", 443, "not-allowed");
    deny("planner", "r2", "c.cdn.example.com", 443, "not-allowed");
    deny("planner", "r3", "pypi.org", 8443, "port-not-allowed");
    deny("planner", "r3", "169.254.169.254", 80, "ip-literal");
    deny("planner", "r3", "metadata.internal.example", 80, "non-public-address");
    deny("planner", "r3", "a.github.io", 443, "not-allowed");
    deny("helper", "r9", "only-helper.example.com", 443, "not-allowed");
    JsonNode proposal = get(PROPOSAL + "?since=7d", api.reader);
    assertThat(proposal.path("version").asLong()).isEqualTo(1);
    assertThat(proposal.path("refusals_read").asLong()).isEqualTo(10);
    List<String> entries = new ArrayList<>();
    proposal.path("entries").forEach(e -> entries.add(e.path("entry").asText()));
    assertThat(entries)
        .containsExactly(
            "files.pythonhosted.org", "*.cdn.example.com", "a.github.io", "pypi.org:8443");
    JsonNode first = proposal.path("entries").get(0);
    assertThat(first.path("refusals").asLong()).isEqualTo(3);
    assertThat(first.path("runs").asInt()).isEqualTo(3);
    assertThat(texts(first.path("example_runs"))).containsExactlyInAnyOrder("r1", "r2", "r3");
    assertThat(proposal.path("entries").get(1).path("hosts")).hasSize(3);
    List<String> stays = new ArrayList<>();
    proposal
        .path("not_fixable")
        .forEach(n -> stays.add(n.path("host").asText() + " " + n.path("why").asText()));
    assertThat(stays)
        .containsExactlyInAnyOrder(
            "169.254.169.254 ip-literal", "metadata.internal.example non-public-address");
    assertThat(texts(proposal.path("allow"))).containsExactly("api.vendor.com", "pypi.org");
    assertThat(texts(proposal.path("allow_after")))
        .containsExactly(
            "api.vendor.com",
            "pypi.org",
            "files.pythonhosted.org",
            "*.cdn.example.com",
            "a.github.io",
            "pypi.org:8443");
    assertThat(proposal.path("loosenings")).hasSize(4);
    assertThat(proposal.toString()).doesNotContain("only-helper");
  }

  @Test
  void anAgentWithNoRefusalsGetsAnEmptyProposal() {
    allowed("planner", "r1", "pypi.org", 443);
    JsonNode proposal = get(PROPOSAL, api.reader);
    assertThat(proposal.path("entries")).isEmpty();
    assertThat(proposal.path("refusals_read").asLong()).isZero();
    assertThat(texts(proposal.path("allow_after"))).containsExactly("api.vendor.com", "pypi.org");
  }

  @Test
  void badRequestsAreRefusedWithWhatToDo() {
    record Bad(String path, String token, int status, String code, String says) {}
    for (Bad bad :
        List.of(
            new Bad(
                CONFIG + "/agents/nobody/egress-proposal",
                api.reader,
                404,
                "agent_not_listed",
                "nobody"),
            new Bad(
                CONFIG + "/agents/Not_An_Agent/egress-proposal",
                api.reader,
                400,
                "invalid_request",
                "not an agent name"),
            new Bad(
                PROPOSAL + "?since=last-week",
                api.reader,
                400,
                "invalid_request",
                "neither an age"),
            new Bad(
                PROPOSAL + "?since=91d", api.reader, 400, "invalid_request", "past the 90 days"),
            new Bad(
                PROPOSAL + "?since=999999d",
                api.reader,
                400,
                "invalid_request",
                "past the 90 days"),
            new Bad(
                PROPOSAL + "?since=2999-01-01T00:00:00Z",
                api.reader,
                400,
                "invalid_request",
                "in the future"),
            new Bad(
                PROPOSAL + "?agent=planner",
                api.reader,
                400,
                "invalid_request",
                "unknown query parameter"),
            new Bad(PROPOSAL, api.auditor, 403, "missing_scope", "agent_sandbox.read"))) {
      Answer answer = api.client.get(bad.path(), bad.token());
      assertThat(answer.status()).as(bad.path() + ": " + answer.body()).isEqualTo(bad.status());
      assertThat(answer.json().path("error").asText()).isEqualTo(bad.code());
      assertThat(answer.json().path("message").asText()).contains(bad.says());
    }
  }

  @Test
  void savingAProposalIsAGovernedLooseningWhoseRowRecordsItsImpact() throws Exception {
    deny("planner", "r1", "files.pythonhosted.org", 443, "not-allowed");
    deny("planner", "r2", "files.pythonhosted.org", 443, "not-allowed");
    JsonNode proposal = get(PROPOSAL, api.reader);
    ObjectNode document = editable(get(CONFIG, api.reader));
    ((ObjectNode) document.path("agents").path("planner"))
        .set("allow", proposal.path("allow_after"));
    document.put("version", proposal.path("version").asLong());
    Answer refused = api.client.put(CONFIG, api.configurer, document.toString());
    assertThat(refused.status()).as("a loosening without governance.weaken").isEqualTo(403);
    JsonNode refusedImpact = refused.json().path("impact").path("agents").get(0);
    assertThat(refusedImpact.path("would_allow").path("refusals").asLong()).isEqualTo(2);
    document.put("reason", "CHG-7 from the proposal");
    Answer saved = api.client.put(CONFIG, api.admin, document.toString());
    assertThat(saved.status()).as(saved.body()).isEqualTo(200);
    JsonNode impact = saved.json().path("change").path("impact");
    assertThat(impact.path("agents")).hasSize(1);
    assertThat(impact.path("agents_unchanged").asInt()).isEqualTo(1);
    JsonNode planner = impact.path("agents").get(0);
    assertThat(planner.path("agent").asText()).isEqualTo("planner");
    assertThat(planner.path("would_allow").path("refusals").asLong()).isEqualTo(2);
    assertThat(planner.path("would_allow").path("runs").asInt()).isEqualTo(2);
    assertThat(planner.path("would_refuse").path("runs").asInt()).isZero();
    AuditRow row = rows("agent_sandbox.config.update").getLast();
    JsonNode counts = row.data().path("impact").path("agents").path("planner");
    assertThat(counts.path("would_allow").path("refusals").asLong()).isEqualTo(2);
    assertThat(counts.path("would_allow").path("runs").asInt()).isEqualTo(2);
    assertThat(counts.path("would_allow").path("hosts").asInt()).isEqualTo(1);
    assertThat(counts.path("would_refuse").path("runs").asInt()).isZero();
    JsonNode again = get(PROPOSAL, api.reader);
    assertThat(again.path("entries")).isEmpty();
    assertThat(again.path("now_allowed").get(0).path("host").asText())
        .isEqualTo("files.pythonhosted.org");
  }

  @Test
  void aDryRunTighteningSaysHowManyRunsItWouldHaveBroken() throws Exception {
    for (int run = 0; run < 37; run++) {
      allowed("planner", "run-" + run, "api.vendor.com", 443);
      allowed("planner", "run-" + run, "pypi.org", 443);
    }
    allowed("helper", "helper-run", "pypi.org", 443);
    ObjectNode document = editable(get(CONFIG, api.reader));
    ((ObjectNode) document.path("agents").path("planner"))
        .set("allow", JSON.createArrayNode().add("pypi.org"));
    Answer preview =
        api.client.put(
            CONFIG + "?dry_run=true&impact_since=1d",
            api.configurer,
            document.toString(),
            "If-Match",
            "\"1\"");
    assertThat(preview.status()).as(preview.body()).isEqualTo(200);
    JsonNode change = preview.json().path("change");
    assertThat(change.path("weakening").asBoolean()).isFalse();
    JsonNode broken = change.path("impact").path("agents").get(0).path("would_refuse");
    assertThat(broken.path("runs").asInt()).isEqualTo(37);
    assertThat(broken.path("connections").asLong()).isEqualTo(37);
    assertThat(broken.path("hosts").asInt()).isEqualTo(1);
    JsonNode host = broken.path("top").get(0);
    assertThat(host.path("host").asText()).isEqualTo("api.vendor.com");
    assertThat(texts(host.path("refused_as"))).containsExactly("not-allowed");
    assertThat(host.path("example_runs")).hasSize(5);
    assertThat(rows("agent_sandbox.config")).as("a preview is not audited").hasSize(1);
    Answer saved = api.client.put(CONFIG, api.configurer, document.toString(), "If-Match", "\"1\"");
    assertThat(saved.status()).as(saved.body()).isEqualTo(200);
    JsonNode counts =
        rows("agent_sandbox.config.update").getLast().data().path("impact").path("agents");
    assertThat(counts.path("planner").path("would_refuse").path("runs").asInt()).isEqualTo(37);
    assertThat(counts.has("helper")).as("helper's lists did not change").isFalse();
  }

  @Test
  void anEgressPolicyChangeIsMeasuredOnEveryAgentOfTheScopesItMoves() {
    allowed("planner", "p1", "api.vendor.com", 443);
    allowed("helper", "h1", "pypi.org", 443);
    Answer preview =
        api.client.put(
            EGRESS + "?dry_run=true",
            api.configurer,
            "{\"scopes\": {\"planner\": {\"allow\": [\"pypi.org\"]}}}");
    assertThat(preview.status()).as(preview.body()).isEqualTo(200);
    JsonNode agents = preview.json().path("change").path("impact").path("agents");
    assertThat(agents).hasSize(1);
    JsonNode broken = agents.get(0).path("would_refuse");
    assertThat(agents.get(0).path("agent").asText()).isEqualTo("planner");
    assertThat(broken.path("runs").asInt()).isEqualTo(1);
    assertThat(texts(broken.path("top").get(0).path("refused_as")))
        .containsExactly("instance-policy");
  }

  @Test
  void aMalformedImpactWindowIsRefused() {
    Answer answer =
        api.client.put(
            CONFIG + "?dry_run=true&impact_since=forever", api.admin, "{}", "If-Match", "\"1\"");
    assertThat(answer.status()).isEqualTo(400);
    assertThat(answer.json().path("message").asText()).contains("impact_since");
  }

  static ObjectNode editable(JsonNode view) {
    ObjectNode document = view.deepCopy();
    for (String computed : List.of("version", "updated_at", "updated_by", "change")) {
      document.remove(computed);
    }
    document.path("agents").forEach(agent -> ((ObjectNode) agent).remove("effective_allow"));
    return document;
  }
}
