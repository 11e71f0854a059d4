package dev.agentsandbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.policy.config.AgentGrant;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.runs.OperatorEgress;
import dev.agentsandbox.runs.RunContractServices;
import dev.agentsandbox.runs.RunSettings;
import dev.agentsandbox.server.http.Route;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.AuditRow;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.testing.api.ApiClient;
import dev.agentsandbox.testing.api.ApiClient.Answer;
import java.net.http.HttpRequest;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A token limited to agent {@code alpha} walks every route of the route table against agent {@code
 * bravo}'s runs and settings (docs/architecture.md invariant 13). The cases are generated from the
 * table itself: every route whose path has a run {@code {id}} must answer bravo's runs exactly as a
 * run that does not exist, and every other route needs a case below, so a new route fails this test
 * until someone says what a limited token gets from it. The token was created with every scope,
 * straight in the store (the command line refuses that): the API must hold it to its agents anyway.
 */
class AgentScopeTest {
  private static final String FEATURE = "/api/admin/platform/agent-sandbox";
  private static final String RUNS = FEATURE + "/runs";
  private static final String A = "alpha";
  private static final String B = "bravo";
  private static final String LIMITED = "team-alpha";
  private static final String NO_SUCH_RUN = "zzzzzzzzzzzzzzzzzzzz";

  private HeldRunsBackend backend;
  private Store store;
  private AgentSandboxServer server;
  private ApiClient client;
  private String admin;
  private String limited;
  private String bLive;
  private String bEnded;
  private String aEnded;
  private String bSession;
  private final List<String> aRuns = new ArrayList<>();

  @BeforeEach
  void start(@TempDir Path dir) {
    store = Store.open("jdbc:sqlite:" + dir.resolve("scope.db"));
    backend =
        new HeldRunsBackend(
            new dev.agentsandbox.runs.local.LocalSessionBackend(
                "docker", dir.resolve("sessions"), java.time.Clock.systemUTC()));
    server =
        AgentSandboxServer.start(
            new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 0),
            store,
            new RunWiring(
                List.of(backend),
                OperatorEgress.NONE,
                RunSettings.defaults("agent-scope-test"),
                RunWiring.every(Duration.ofHours(1)),
                RunContractServices.Config.NONE));
    client = new ApiClient(server.baseUrl());
    admin = store.tokens().create("admin", Scopes.ALL, null).secret();
    limited =
        store
            .tokens()
            .create(LIMITED, Scopes.ALL, AgentGrant.only(List.of(A)), null, null)
            .secret();
    assertThat(
            client
                .put(
                    FEATURE,
                    admin,
                    "{\"enabled\": true, \"agents\": {\"alpha\": {\"allow\": [\"api.alpha.example\"]},"
                        + " \"bravo\": {\"allow\": [\"api.bravo.example\"]}},"
                        + " \"reason\": \"CHG-1\"}")
                .status())
        .isEqualTo(200);
    assertThat(
            client
                .put(
                    "/api/admin/platform/egress-policy",
                    admin,
                    "{\"scopes\": {\"alpha\": {\"allow\": [\"*.alpha.example\"]},"
                        + " \"bravo\": {\"allow\": [\"*.bravo.example\"]}},"
                        + " \"default\": {\"allow\": []}, \"reason\": \"CHG-2\"}")
                .status())
        .isEqualTo(200);
    bEnded = ended(admin, B);
    bLive = started(admin, B, "hold");
    aEnded = ended(limited, A);
    aRuns.add(aEnded);
    Answer opened = openSession(admin, B);
    assertThat(opened.status()).as(opened.body()).isEqualTo(201);
    bSession = opened.json().get("run_id").asText();
  }

  @AfterEach
  void stop() {
    server.close();
    store.close();
  }

  @Test
  void aTokenOfAlphaFindsNothingOfBravoOnAnyRoute() {
    Map<String, Consumer<String>> cases = nonRunCases();
    List<String> walked = new ArrayList<>();
    for (Route route : server.routes()) {
      String key = route.method() + " " + route.path();
      if (route.isPublic()) {
        publicRoute(route);
      } else if (route.path().contains("{id}")) {
        runRoute(route);
      } else if (cases.containsKey(key)) {
        cases.get(key).accept(key);
      } else {
        fail(
            key
                + " has no case here: say what a token limited to agents gets from it (a route of"
                + " a run takes its id as {id}, which the run guard checks)");
      }
      walked.add(key);
    }
    assertThat(cases.keySet()).as("every case is a route").isSubsetOf(walked);

    // Its own live run it may kill, and the kill row names it.
    String aLive = started(limited, A, "hold");
    aRuns.add(aLive);
    HttpRequest.Builder kill = client.builder(RUNS + "/" + aLive, limited).DELETE();
    assertThat(client.send(kill).status()).isEqualTo(202);
    assertThat(rowsOf(aLive))
        .filteredOn(row -> row.type().equals("agent_sandbox.kill"))
        .singleElement()
        .satisfies(row -> assertThat(row.data().get("requested_by").asText()).isEqualTo(LIMITED));

    assertThat(backend.holds(bLive)).as("bravo's live run was not killed").isTrue();
    assertThat(client.get(RUNS + "/" + bLive, admin).json().get("status").asText())
        .isEqualTo("running");
    JsonNode session = client.get(RUNS + "/" + bSession, admin).json();
    assertThat(session.get("status").asText())
        .as("bravo's session was not closed")
        .isEqualTo("running");
    assertThat(client.get(RUNS + "/" + bSession + "/steps", admin).json().get("steps"))
        .as("no step ran in bravo's session")
        .isEmpty();
    for (String run : List.of(bLive, bEnded, bSession)) {
      assertThat(rowsOf(run))
          .as("no row of bravo's run %s was caused by the alpha token", run)
          .noneMatch(row -> row.actor().equals(LIMITED));
    }
    for (String run : aRuns) {
      await()
          .atMost(Duration.ofSeconds(20))
          .until(
              () -> rowsOf(run).stream().anyMatch(r -> r.type().equals("agent_sandbox.teardown")));
      List<AuditRow> rows = rowsOf(run);
      assertThat(rows)
          .as("every row of alpha's run %s names the token that started it", run)
          .extracting(AuditRow::type)
          .contains(
              "agent_sandbox.launch",
              "agent_sandbox.started",
              "agent_sandbox.egress.deny",
              "agent_sandbox.teardown");
      assertThat(rows).allSatisfy(row -> assertThat(row.actor()).as(row.type()).isEqualTo(LIMITED));
    }
    List<AuditRow> refused =
        store.audit().query(new AuditQuery("agent_sandbox.refused", null, null, null, null, 100));
    assertThat(refused)
        .as("the alpha token's runs of bravo were refused and audited as its own")
        .filteredOn(row -> row.actor().equals(LIMITED))
        .hasSize(3)
        .allSatisfy(
            row -> {
              assertThat(row.agent()).isEqualTo(B);
              assertThat(row.data().get("reason").asText()).isEqualTo("agent_not_listed");
              assertThat(row.data().get("token_agents").toString()).isEqualTo("[\"alpha\"]");
            })
        .filteredOn(row -> row.data().has("kind"))
        .singleElement()
        .satisfies(row -> assertThat(row.data().get("kind").asText()).isEqualTo("session"));
  }

  /** A public route answers without a token and names no agent and no run. */
  private void publicRoute(Route route) {
    String path = route.path().replace("{name}", "app.js");
    Answer answer = client.get(path, null);
    assertThat(answer.body()).as(path).doesNotContain(B).doesNotContain(bLive);
  }

  /**
   * A route of a run: bravo's runs, live or ended, and its open session answer exactly as an id no
   * run has; alpha's run gets past the guard; a token of every agent reaches bravo's (so the 404 is
   * the guard's).
   */
  private void runRoute(Route route) {
    Answer none = call(route, limited, NO_SUCH_RUN);
    assertThat(none.status()).as("%s of no run", route.path()).isEqualTo(404);
    for (String run : List.of(bLive, bEnded, bSession)) {
      Answer answer = call(route, limited, run);
      assertThat(answer.status())
          .as("%s %s of bravo's run: %s", route.method(), route.path(), answer.body())
          .isEqualTo(404);
      assertThat(answer.json().get("error").asText()).isEqualTo("run_not_found");
      assertThat(answer.json().get("message").asText())
          .as("the same message as for no run")
          .isEqualTo(none.json().get("message").asText().replace(NO_SUCH_RUN, run));
      assertThat(answer.body()).doesNotContain(B);
    }
    Answer own = call(route, limited, aEnded);
    assertThat(own.body())
        .as("%s %s of alpha's own run gets past the guard", route.method(), route.path())
        .doesNotContain("run_not_found");
    Answer adminOfB = call(route, admin, bEnded);
    assertThat(adminOfB.body())
        .as("%s %s of bravo's run with a token of every agent", route.method(), route.path())
        .doesNotContain("run_not_found");
  }

  /** What each route that names no run gives a token limited to alpha. */
  private Map<String, Consumer<String>> nonRunCases() {
    Map<String, Consumer<String>> cases = new LinkedHashMap<>();
    cases.put(
        "GET " + FEATURE,
        key -> {
          JsonNode config = ok(key, client.get(FEATURE, limited));
          assertThat(names(config.get("agents"))).containsExactly(A);
          assertThat(config.get("agents").get(A).get("effective_allow").toString())
              .isEqualTo("[\"api.alpha.example\"]");
        });
    cases.put("PUT " + FEATURE, key -> instanceWide(key, client.put(FEATURE, limited, "{}")));
    cases.put(
        "GET /api/admin/platform/egress-policy",
        key -> {
          JsonNode policy = ok(key, client.get("/api/admin/platform/egress-policy", limited));
          assertThat(names(policy.get("scopes"))).containsExactly(A);
        });
    cases.put(
        "PUT /api/admin/platform/egress-policy",
        key -> instanceWide(key, client.put("/api/admin/platform/egress-policy", limited, "{}")));
    for (String audit : List.of("", "/export", "/verify")) {
      String path = "/api/admin/platform/audit" + audit;
      cases.put("GET " + path, key -> instanceWide(key, client.get(path, limited)));
    }
    cases.put(
        "GET " + FEATURE + "/backends", key -> ok(key, client.get(FEATURE + "/backends", limited)));
    cases.put(
        "POST " + FEATURE + "/plan",
        key -> {
          notListed(
              key,
              post(FEATURE + "/plan", limited, B, "ok"),
              post(FEATURE + "/plan", limited, "nobody", "ok"));
          assertThat(ok(key, post(FEATURE + "/plan", limited, A, "ok")).get("agent").asText())
              .isEqualTo(A);
        });
    cases.put(
        "POST " + FEATURE + "/run",
        key -> {
          notListed(
              key,
              post(FEATURE + "/run", limited, B, "ok"),
              post(FEATURE + "/run", admin, "nobody", "ok"));
          JsonNode run = ok(key, post(FEATURE + "/run", limited, A, "ok"));
          aRuns.add(run.get("run_id").asText());
        });
    cases.put(
        "POST " + RUNS,
        key -> {
          notListed(key, post(RUNS, limited, B, "ok"), post(RUNS, admin, "nobody", "ok"));
          aRuns.add(started(limited, A, "ok"));
        });
    cases.put(
        "GET " + RUNS,
        key -> {
          JsonNode runs = ok(key, client.get(RUNS, limited)).get("runs");
          assertThat(runs)
              .isNotEmpty()
              .allSatisfy(r -> assertThat(r.get("agent").asText()).isEqualTo(A));
          assertThat(runs.findValuesAsText("run_id"))
              .contains(aEnded)
              .doesNotContain(bLive, bEnded, bSession);
          assertThat(ok(key, client.get(RUNS + "?agent=" + B, limited)).get("runs")).isEmpty();
          assertThat(client.get(RUNS + "?agent=" + B, admin).json().get("runs")).hasSize(3);
        });
    cases.put(
        "GET " + FEATURE + "/agents/{agent}/egress-proposal",
        key -> {
          notListed(
              key,
              client.get(FEATURE + "/agents/" + B + "/egress-proposal", limited),
              client.get(FEATURE + "/agents/nobody/egress-proposal", admin));
          assertThat(client.get(FEATURE + "/agents/" + B + "/egress-proposal", admin).status())
              .isEqualTo(200);
          ok(key, client.get(FEATURE + "/agents/" + A + "/egress-proposal", limited));
        });
    cases.put(
        "GET /api/admin/platform/token",
        key -> {
          JsonNode token = ok(key, client.get("/api/admin/platform/token", limited));
          assertThat(token.get("name").asText()).isEqualTo(LIMITED);
          assertThat(token.get("agents").toString()).isEqualTo("[\"alpha\"]");
          assertThat(client.get("/api/admin/platform/token", admin).json().get("agents").isNull())
              .isTrue();
        });
    cases.put(
        "POST " + FEATURE + "/sessions",
        key -> {
          notListed(key, openSession(limited, B), openSession(admin, "nobody"));
          JsonNode own = ok(key, openSession(limited, A));
          assertThat(own.get("agent").asText()).isEqualTo(A);
          String closed = own.get("run_id").asText();
          assertThat(client.send(client.builder(RUNS + "/" + closed, limited).DELETE()).status())
              .as("alpha closes its own session")
              .isEqualTo(200);
        });
    return cases;
  }

  private Answer openSession(String token, String agent) {
    return client.send(
        client
            .builder(FEATURE + "/sessions", token)
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString("{\"agent\": \"" + agent + "\"}")));
  }

  private static JsonNode ok(String key, Answer answer) {
    assertThat(answer.status()).as("%s: %s", key, answer.body()).isBetween(200, 299);
    assertThat(answer.body()).as(key).doesNotContain(B);
    return answer.json();
  }

  /** An instance-wide route: refused to a limited token whatever scopes it holds. */
  private static void instanceWide(String key, Answer answer) {
    assertThat(answer.status()).as("%s: %s", key, answer.body()).isEqualTo(403);
    assertThat(answer.json().get("error").asText()).isEqualTo("missing_scope");
    assertThat(answer.json().get("message").asText()).contains("is limited to agents alpha");
  }

  /** Bravo is answered exactly as an agent nobody configured (by name only). */
  private static void notListed(String key, Answer bravo, Answer nobody) {
    assertThat(bravo.status()).as("%s: %s", key, bravo.body()).isEqualTo(404);
    assertThat(bravo.json().get("error").asText()).isEqualTo("agent_not_listed");
    assertThat(nobody.json().get("error").asText()).isEqualTo("agent_not_listed");
    assertThat(bravo.json().get("message").asText())
        .isEqualTo(nobody.json().get("message").asText().replace("nobody", B));
    assertThat(bravo.json().has("problems")).isEqualTo(nobody.json().has("problems"));
  }

  private static List<String> names(JsonNode object) {
    List<String> names = new ArrayList<>();
    for (Iterator<String> it = object.fieldNames(); it.hasNext(); ) {
      names.add(it.next());
    }
    return names;
  }

  /** One request of {@code route} for run {@code runId}: a valid request of the document's kind. */
  private Answer call(Route route, String token, String runId) {
    String path = route.path().replace("{id}", runId).replace("{n}", "1");
    if (path.endsWith("/artifacts/file") || path.endsWith("/files")) {
      path += "?path=app.py";
    }
    HttpRequest.Builder builder = client.builder(path, token);
    switch (route.method()) {
      case "GET" -> builder.GET();
      case "DELETE" -> builder.DELETE();
      case "POST" ->
          builder
              .header("Content-Type", "application/json")
              .POST(HttpRequest.BodyPublishers.ofString("{\"command\": [\"true\"]}"));
      case "PUT" ->
          builder
              .header("Content-Type", "application/octet-stream")
              .PUT(HttpRequest.BodyPublishers.ofString("print('hi')\n"));
      default -> throw new AssertionError("a method the walk does not know: " + route.method());
    }
    return client.send(builder);
  }

  private Answer post(String path, String token, String agent, String command) {
    HttpRequest.Builder builder =
        client
            .builder(path, token)
            .header("Content-Type", "application/json")
            .POST(
                HttpRequest.BodyPublishers.ofString(
                    "{\"agent\": \"" + agent + "\", \"command\": [\"" + command + "\"]}"));
    return client.send(builder);
  }

  private String started(String token, String agent, String command) {
    Answer answer = post(RUNS, token, agent, command);
    assertThat(answer.status()).as(answer.body()).isEqualTo(202);
    return answer.json().get("run_id").asText();
  }

  private String ended(String token, String agent) {
    String runId = started(token, agent, "ok");
    await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> !client.get(RUNS + "/" + runId, admin).json().get("ended_at").isNull());
    return runId;
  }

  private List<AuditRow> rowsOf(String runId) {
    return store.audit().query(new AuditQuery(null, null, runId, null, null, 1000));
  }
}
