package dev.agentsandbox.server.run;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.server.RunWiring;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.AuditRow;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.testing.api.ApiClient;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs that must not happen, refused before anything is created and audited, on a control plane
 * with no backend at all (so nothing could be created even by mistake).
 */
class RunRefusalTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String BASE = "/api/admin/platform/agent-sandbox";
  private Store store;
  private AgentSandboxServer server;
  private ApiClient api;
  private String admin;
  private String reader;

  @BeforeEach
  void start(@TempDir Path dir) {
    store = Store.open("jdbc:sqlite:" + dir.resolve("refusal.db"));
    server =
        AgentSandboxServer.start(
            new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
            store,
            RunWiring.none("refusal-test"));
    api = new ApiClient(server.baseUrl());
    admin = store.tokens().create("admin", Scopes.ALL, null).secret();
    reader = store.tokens().create("reader", java.util.Set.of(Scopes.READ), null).secret();
  }

  @AfterEach
  void stop() {
    server.close();
    store.close();
  }

  @Test
  void sandboxesTurnedOffRefuseEveryRun() throws Exception {
    ApiClient.Answer run =
        api.post(BASE + "/run", admin, "{\"agent\": \"helper\", \"command\": [\"true\"]}");
    assertThat(run.status()).isEqualTo(409);
    assertThat(run.json().path("error").asText()).isEqualTo("sandboxes_disabled");
    assertThat(refusals())
        .singleElement()
        .satisfies(
            row -> {
              assertThat(row.data().path("reason").asText()).isEqualTo("sandboxes_disabled");
              assertThat(row.actor()).isEqualTo("admin");
            });
  }

  @Test
  void aNamedBackendThisHostLacksRefusesAndNeverFallsBack() throws Exception {
    configure("firecracker");
    ApiClient.Answer run =
        api.post(BASE + "/run", admin, "{\"agent\": \"helper\", \"command\": [\"true\"]}");
    assertThat(run.status()).isEqualTo(503);
    JsonNode body = run.json();
    assertThat(body.path("error").asText()).isEqualTo("backend_unavailable");
    assertThat(body.path("message").asText()).contains("firecracker");
    assertThat(refusals())
        .singleElement()
        .satisfies(
            row -> assertThat(row.data().path("reason").asText()).isEqualTo("backend_unavailable"));
    assertThat(store.runs().recent(10)).isEmpty();
  }

  @Test
  void planNeedsOnlyReadAndRunNeedsTheRunScope() throws Exception {
    configure("firecracker");
    ApiClient.Answer run =
        api.post(BASE + "/run", reader, "{\"agent\": \"helper\", \"command\": [\"true\"]}");
    assertThat(run.status()).isEqualTo(403);
    assertThat(run.json().path("missing_scope").asText()).isEqualTo(Scopes.RUN);
    ApiClient.Answer kill = api.delete(BASE + "/runs/abc", reader);
    assertThat(kill.status()).isEqualTo(403);
  }

  @Test
  void malformedRunRequestsListEveryProblemWithItsPath() throws Exception {
    ApiClient.Answer bad =
        api.post(
            BASE + "/run",
            admin,
            "{\"agent\": \"\", \"cmd\": [\"true\"], \"command\": [\"ok\", 7], \"env\": {\"A\": 1}}");
    assertThat(bad.status()).isEqualTo(400);
    JsonNode body = bad.json();
    assertThat(body.path("error").asText()).isEqualTo("invalid_request");
    List<String> paths = body.path("problems").findValuesAsText("path");
    assertThat(paths).contains("cmd", "agent", "command[1]", "env.A");
    ApiClient.Answer empty =
        api.post(BASE + "/run", admin, "{\"agent\": \"helper\", \"command\": []}");
    assertThat(empty.status()).isEqualTo(400);
    assertThat(store.runs().recent(10)).isEmpty();
  }

  @Test
  void unknownAndMalformedRunIdsAre404WithoutEchoingThem() throws Exception {
    ApiClient.Answer unknown = api.get(BASE + "/runs/abcdefghij234567abcd", admin);
    assertThat(unknown.status()).isEqualTo(404);
    assertThat(unknown.json().path("error").asText()).isEqualTo("run_not_found");
    ApiClient.Answer malformed = api.get(BASE + "/runs/..%2F..%2Fetc", admin);
    assertThat(malformed.status()).isEqualTo(404);
    assertThat(malformed.body()).doesNotContain("etc");
  }

  @Test
  void theRunsListFiltersByAgentStatusSinceAndLabelAndRefusesWhatItDoesNotKnow() throws Exception {
    java.time.Instant now = java.time.Instant.now();
    com.fasterxml.jackson.databind.JsonNode command = JSON.readTree("[\"true\"]");
    String[][] rows = {
      {"aaaaaaaaaaaaaaaaaaa1", "helper", "exited", "7200", "alice"},
      {"aaaaaaaaaaaaaaaaaaa2", "helper", "running", "60", "bob"},
      {"aaaaaaaaaaaaaaaaaaa3", "builder", "exited", "30", "alice"},
    };
    for (String[] row : rows) {
      java.time.Instant created = now.minusSeconds(Long.parseLong(row[3]));
      store
          .runs()
          .insert(
              new dev.agentsandbox.store.RunRecord(
                  row[0],
                  row[1],
                  "docker",
                  "runc",
                  dev.agentsandbox.store.RunStatus.fromWireName(row[2]),
                  command,
                  created,
                  created,
                  row[2].equals("exited") ? created.plusSeconds(1) : null,
                  row[2].equals("exited") ? 0 : null,
                  row[2].equals("exited") ? "exit" : null,
                  null,
                  created.plusSeconds(900),
                  "elsewhere"),
              java.util.Map.of("owner", row[4], "task-ref", "T-" + row[0].charAt(19)));
    }
    assertThat(listed(""))
        .containsExactly("aaaaaaaaaaaaaaaaaaa3", "aaaaaaaaaaaaaaaaaaa2", "aaaaaaaaaaaaaaaaaaa1");
    assertThat(listed("?agent=helper"))
        .containsExactly("aaaaaaaaaaaaaaaaaaa2", "aaaaaaaaaaaaaaaaaaa1");
    assertThat(listed("?status=exited"))
        .containsExactly("aaaaaaaaaaaaaaaaaaa3", "aaaaaaaaaaaaaaaaaaa1");
    assertThat(listed("?since=1h")).containsExactly("aaaaaaaaaaaaaaaaaaa3", "aaaaaaaaaaaaaaaaaaa2");
    assertThat(listed("?agent=helper&status=exited&since=3h"))
        .containsExactly("aaaaaaaaaaaaaaaaaaa1");
    assertThat(listed("?label=owner%3Dalice"))
        .containsExactly("aaaaaaaaaaaaaaaaaaa3", "aaaaaaaaaaaaaaaaaaa1");
    assertThat(listed("?label=owner%3Dalice,task-ref%3DT-1"))
        .containsExactly("aaaaaaaaaaaaaaaaaaa1");
    assertThat(listed("?label=owner%3Dalice&agent=helper&status=running")).isEmpty();
    assertThat(listed("?label=owner%3Dcarol")).isEmpty();
    com.fasterxml.jackson.databind.JsonNode first =
        api.get(BASE + "/runs?agent=builder", admin).json().path("runs").get(0);
    assertThat(first.path("exit_status").asInt()).isZero();
    assertThat(first.path("started_at").isTextual()).isTrue();
    for (String bad :
        List.of(
            "?status=paused",
            "?since=yesterday",
            "?colour=red",
            "?limit=0",
            "?label=owner",
            "?label=owner%3Dal%20ice",
            "?label=Bad%20Key%3Dx")) {
      ApiClient.Answer refused = api.get(BASE + "/runs" + bad, admin);
      assertThat(refused.status()).as(bad).isEqualTo(400);
      assertThat(refused.json().path("error").asText()).isEqualTo("invalid_request");
    }
  }

  private List<String> listed(String query) throws Exception {
    ApiClient.Answer response = api.get(BASE + "/runs" + query, admin);
    assertThat(response.status()).as(response.body()).isEqualTo(200);
    List<String> ids = new java.util.ArrayList<>();
    response.json().path("runs").forEach(r -> ids.add(r.path("run_id").asText()));
    return ids;
  }

  private void configure(String backend) {
    ApiClient.Answer put =
        api.put(
            BASE,
            admin,
            "{\"enabled\": true, \"backend\": \""
                + backend
                + "\", \"agents\": {\"helper\": {\"allow\": []}}, \"reason\": \"test\"}");
    assertThat(put.status()).as(put.body()).isEqualTo(200);
  }

  private List<AuditRow> refusals() {
    return store
        .audit()
        .query(new AuditQuery("agent_sandbox.refused", null, null, null, null, 100));
  }
}
