package dev.agentsandbox.server.run;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.docker.DockerBackend;
import dev.agentsandbox.backend.docker.DockerBackendConfig;
import dev.agentsandbox.backend.docker.DockerClients;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.RunEgress;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.runs.OperatorEgress;
import dev.agentsandbox.runs.RunSettings;
import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.server.RunWiring;
import dev.agentsandbox.store.RunRecord;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.testing.DockerObjects;
import dev.agentsandbox.testing.LinkServer;
import dev.agentsandbox.testing.api.ApiClient;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The run API end to end: a real server on loopback, a real SQLite store, the real Docker backend
 * with the locally built proxy and workload images, and an upstream on this host that only the
 * allow-list reaches. Each test asserts the response, the audit rows and that nothing labelled is
 * left behind.
 */
class RunApiIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String BASE = "/api/admin/platform/agent-sandbox";
  private static final String IMAGE = "agent-sandbox/workload:dev";

  /**
   * An upstream only this host carries: a port-less link holding one address from the benchmarking
   * range (198.18.0.0/15, never routed on the internet), which the tests declare internal.
   */
  private static final String UPSTREAM_ADDRESS = "198.18.79.1";

  private static final String UPSTREAM_BODY = "hello from upstream";
  private static LinkServer upstream;
  private static Path dataDir;
  private static Store store;
  private static AgentSandboxServer server;
  private static DockerClient docker;
  private static String admin;
  private static String instanceId;

  /** Every admin-API exchange, checked against openapi.json; a run may take minutes to answer. */
  private static ApiClient api;

  @BeforeAll
  static void start() throws Exception {
    docker = DockerClients.fromEnvironment();
    Probe probe = new DockerBackend(docker, DockerBackendConfig.defaults()).probe();
    if (!probe.available()) {
      fail(
          "RunApiIT needs a Docker daemon: "
              + probe.detail()
              + " (scripts/services/docker.sh start)");
    }
    for (String image : List.of(IMAGE, DockerBackendConfig.DEFAULT_PROXY_IMAGE)) {
      try {
        docker.inspectImageCmd(image).exec();
      } catch (RuntimeException e) {
        fail("RunApiIT needs image " + image + " (run images/build.sh)");
      }
    }
    upstream = LinkServer.onLink("asb-runs0", UPSTREAM_ADDRESS, UPSTREAM_BODY);
    dataDir = Files.createTempDirectory("asb-run-it");
    store = Store.open("jdbc:sqlite:" + dataDir.resolve("it.db"));
    instanceId = "runapiit" + System.nanoTime();
    server = startServer();
    api = new ApiClient(server.baseUrl(), Duration.ofMinutes(3));
    admin = store.tokens().create("it-admin", Scopes.ALL, null).secret();
    JsonNode put =
        api.put(
                BASE,
                admin,
                """
            {"enabled": true, "backend": "docker", "reason": "RunApiIT",
             "agents": {
               "helper": {"allow": ["upstream.test:%d"], "image": "%s", "ttl_seconds": 120,
                          "resources": {"cpus": 1, "memory_mb": 256, "pids": 128},
                          "internal": {"upstream": {"cidr": "%s/32", "ports": [%d]}}},
               "slow": {"allow": [], "image": "%s", "ttl_seconds": 3}}}
            """
                    .formatted(upstream.port(), IMAGE, UPSTREAM_ADDRESS, upstream.port(), IMAGE),
                "If-Match",
                "\"0\"")
            .successJson();
    assertThat(put.path("version").asLong()).as(put.toString()).isEqualTo(1);
  }

  private static AgentSandboxServer startServer() {
    return AgentSandboxServer.start(
        new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
        store,
        new RunWiring(
            List.of(new DockerBackend(docker, DockerBackendConfig.defaults())),
            new OperatorEgress(Map.of("upstream.test", List.of(UPSTREAM_ADDRESS))),
            RunSettings.defaults(instanceId),
            RunWiring.every(Duration.ofHours(1))));
  }

  @AfterEach
  void nothingLabelledIsLeft() {
    // A run's sandbox is removed after its result is answered: wait (bounded) for it.
    await()
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(200))
        .untilAsserted(
            () ->
                assertThat(ours())
                    .as("labelled containers and networks of this test's runs")
                    .isEmpty());
  }

  @AfterAll
  static void stop() throws Exception {
    if (server != null) {
      server.close();
    }
    if (store != null) {
      store.close();
    }
    if (upstream != null) {
      upstream.close();
    }
  }

  @Test
  void planShowsTheBackendTheEffectiveListAndEveryObjectAndCreatesNothing() throws Exception {
    JsonNode plan =
        call(
            "POST",
            BASE + "/plan",
            "{\"agent\": \"helper\", \"command\": [\"python\", \"job.py\"]}");
    assertThat(plan.path("backend").asText()).isEqualTo("docker");
    assertThat(plan.path("runtime").asText()).isIn("runsc", "runc");
    assertThat(plan.path("effective_allow").toString())
        .contains("upstream.test:" + upstream.port());
    assertThat(plan.path("manifests").size()).isGreaterThanOrEqualTo(3);
    assertThat(ours()).isEmpty();
    ApiClient.Answer yaml =
        api.send(
            api.builder(BASE + "/plan", admin)
                .header("Accept", "application/yaml")
                .header("Content-Type", "application/json")
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"agent\": \"helper\", \"command\": [\"true\"]}")));
    assertThat(yaml.status()).isEqualTo(200);
    assertThat(yaml.raw().headers().firstValue("Content-Type").orElse(""))
        .startsWith("application/yaml");
    assertThat(yaml.body()).contains("manifests:").contains("backend: \"docker\"");
  }

  @Test
  void aRunReachesItsAllowedHostIsRefusedElsewhereAndIsAudited() throws Exception {
    String script =
        "curl -sS -m 20 http://upstream.test:"
            + upstream.port()
            + "/; echo; curl -sS -m 20 -o /dev/null -w 'denied=%{http_code}' http://denied.test:"
            + upstream.port()
            + "/; echo; exit 3";
    JsonNode result =
        call(
            "POST",
            BASE + "/run",
            JSON.writeValueAsString(
                Map.of("agent", "helper", "command", List.of("sh", "-c", script))));
    assertThat(result.path("end").asText()).as(result.toString()).isEqualTo("exit");
    assertThat(result.path("status").asText()).isEqualTo("exited");
    assertThat(result.path("exit_status").asInt()).isEqualTo(3);
    assertThat(result.path("output_tail").asText()).contains(UPSTREAM_BODY).contains("denied=403");
    List<String> decisions = new ArrayList<>();
    result
        .path("egress")
        .forEach(d -> decisions.add(d.path("decision").asText() + " " + d.path("host").asText()));
    assertThat(decisions).contains("allow upstream.test", "deny denied.test");
    String runId = result.path("run_id").asText();
    List<String> types = auditTypesOnceTornDown(runId);
    assertThat(types)
        .containsSubsequence(
            "agent_sandbox.launch",
            "agent_sandbox.egress.allow",
            "agent_sandbox.egress.deny",
            "agent_sandbox.teardown");
    assertThat(types).doesNotContain("agent_sandbox.failure", "agent_sandbox.timeout");
  }

  /**
   * Issue 26 item 6: a workload that hammers a refused host through the real proxy writes a bounded
   * number of rows, and the teardown row's total is exactly the refusals the workload saw.
   */
  @Test
  void aFloodOfRefusalsThroughTheProxyWritesBoundedRowsAndExactTotals() throws Exception {
    int requests = 3000;
    // One curl, a URL glob: 3,000 plain HTTP requests to a host not on the allow-list.
    String script =
        "curl -s -m 240 -o /dev/null -w '%{http_code}\\n' 'http://flood.denied.test:"
            + upstream.port()
            + "/[1-"
            + requests
            + "]' | grep -c '^403$' | sed 's/^/refused=/'";
    JsonNode result =
        call(
            "POST",
            BASE + "/run",
            JSON.writeValueAsString(
                Map.of("agent", "helper", "command", List.of("sh", "-c", script))));
    assertThat(result.path("end").asText()).as(result.toString()).isEqualTo("exit");
    java.util.regex.Matcher seen =
        java.util.regex.Pattern.compile("refused=(\\d+)")
            .matcher(result.path("output_tail").asText());
    assertThat(seen.find()).as(result.path("output_tail").asText()).isTrue();
    long refused = Long.parseLong(seen.group(1));
    assertThat(refused).as("the workload got a 403 for each request").isEqualTo(requests);
    String runId = result.path("run_id").asText();
    List<String> types = auditTypesOnceTornDown(runId);

    assertThat(types.size()).as("every row of the run: " + types).isLessThan(30);
    assertThat(types.stream().filter("agent_sandbox.egress.deny"::equals).count())
        .as("rows in full: the per-host limit")
        .isEqualTo(10);
    JsonNode rows = call("GET", "/api/admin/platform/audit?run=" + runId + "&limit=1000", null);
    long counted = 0;
    JsonNode teardown = null;
    for (JsonNode row : rows.path("rows")) {
      if (row.path("type").asText().equals("agent_sandbox.egress.deny.counted")) {
        counted += row.path("data").path("count").asLong();
      }
      if (row.path("type").asText().equals("agent_sandbox.teardown")) {
        teardown = row.path("data");
      }
    }
    assertThat(counted + 10).as("every refusal in a row or a count").isEqualTo(requests);
    assertThat(teardown).isNotNull();
    assertThat(teardown.path("egress_denied").asLong()).isEqualTo(requests);
    assertThat(teardown.path("egress_denied_counted").asLong()).isEqualTo(requests - 10);
    JsonNode timeline = call("GET", BASE + "/runs/" + runId + "/timeline", null);
    assertThat(timeline.path("egress").path("denied_total").asLong()).isEqualTo(requests);
  }

  @Test
  void theAnswerIsWholeAndTheSandboxIsRemovedAfterwardsWithItsTeardownRow() throws Exception {
    JsonNode result =
        call(
            "POST",
            BASE + "/run",
            "{\"agent\": \"helper\", \"command\": [\"sh\", \"-c\", \"echo whole; exit 4\"]}");

    // The answer is the run's final result, recorded before the sandbox is removed.
    String runId = result.path("run_id").asText();
    assertThat(result.path("status").asText()).as(result.toString()).isEqualTo("exited");
    assertThat(result.path("end").asText()).isEqualTo("exit");
    assertThat(result.path("exit_status").asInt()).isEqualTo(4);
    assertThat(result.path("output_tail").asText()).isEqualTo("whole\n");
    RunRecord stored = store.runs().find(runId).orElseThrow();
    assertThat(stored.status().wireName()).isEqualTo("exited");
    assertThat(stored.exitStatus()).isEqualTo(4);
    assertThat(auditTypes(runId)).contains("agent_sandbox.started", "agent_sandbox.artifacts");

    // Afterwards: the run's own teardown row, after its artifacts row, and nothing of it is left.
    List<String> types = auditTypesOnceTornDown(runId);
    assertThat(types)
        .containsSubsequence(
            "agent_sandbox.launch",
            "agent_sandbox.started",
            "agent_sandbox.artifacts",
            "agent_sandbox.teardown");
    JsonNode rows = call("GET", "/api/admin/platform/audit?run=" + runId + "&limit=1000", null);
    JsonNode teardown = null;
    for (JsonNode row : rows.path("rows")) {
      if (row.path("type").asText().equals("agent_sandbox.teardown")) {
        teardown = row;
      }
    }
    assertThat(teardown).isNotNull();
    assertThat(teardown.path("actor").asText()).isEqualTo("it-admin");
    assertThat(teardown.path("data").path("removed").asBoolean()).as(teardown.toString()).isTrue();
    assertThat(teardown.path("data").path("exit_status").asInt()).isEqualTo(4);
    assertThat(DockerObjects.ofRun(docker, runId))
        .as("containers, networks and volumes of " + runId)
        .isEmpty();
    JsonNode timeline = call("GET", BASE + "/runs/" + runId + "/timeline", null);
    assertThat(timeline.path("end").path("teardown").path("audit_id").asLong())
        .as(timeline.path("end").toString())
        .isEqualTo(teardown.path("id").asLong());
  }

  @Test
  void envValuesAndCredentialsNeverReachTheTailOrTheAudit() throws Exception {
    String secret = "tok-9f8e7d6c5b4a";
    JsonNode result =
        call(
            "POST",
            BASE + "/run",
            JSON.writeValueAsString(
                Map.of(
                    "agent", "helper",
                    "command",
                        List.of(
                            "sh",
                            "-c",
                            "echo value=$API_TOKEN; echo ghp_0123456789abcdefghijklmnopqrstuvwxyz"),
                    "env", Map.of("API_TOKEN", secret))));
    assertThat(result.path("exit_status").asInt()).as(result.toString()).isZero();
    assertThat(result.path("output_tail").asText())
        .doesNotContain(secret)
        .doesNotContain("ghp_0123")
        .contains("[REDACTED]");
    JsonNode audit =
        call("GET", "/api/admin/platform/audit?run=" + result.path("run_id").asText(), null);
    assertThat(audit.toString()).doesNotContain(secret).doesNotContain(admin).contains("API_TOKEN");
  }

  /**
   * Issue 26's case: the second occurrence of the key ends a line of 16,402 characters, past the 16
   * KiB where a line is cut. It must be redacted in the answer's tail, the stored row and the
   * streamed output alike.
   */
  @Test
  void aSecretAtTheSixteenKibLineCutIsRedactedInTheTailTheRowAndTheOutput() throws Exception {
    String key = "SECRETVALUE-0123456789abcdefgh";
    JsonNode result =
        call(
            "POST",
            BASE + "/run",
            JSON.writeValueAsString(
                Map.of(
                    "agent", "helper",
                    "command",
                        List.of(
                            "sh",
                            "-c",
                            "echo \"$API_KEY\"; head -c 16370 /dev/zero | tr '\\0' x;"
                                + " echo \"$API_KEY\""),
                    "env", Map.of("API_KEY", key))));
    assertThat(result.path("exit_status").asInt()).as(result.toString()).isZero();
    String runId = result.path("run_id").asText();
    String expected = "[REDACTED]\n" + "x".repeat(16370) + "[REDACTED]\n";
    assertThat(result.path("output_tail").asText()).isEqualTo(expected);
    assertThat(store.runs().find(runId).orElseThrow().outputTail()).isEqualTo(expected);
    assertThat(api.get(BASE + "/runs/" + runId + "/output", admin).body()).isEqualTo(expected);
    String tagged =
        api.send(
                api.builder(BASE + "/runs/" + runId + "/output", admin)
                    .header("Accept", "application/x-ndjson")
                    .GET())
            .body();
    assertThat(tagged).doesNotContain("SECRETVALUE").contains("[REDACTED]");
    JsonNode audit = call("GET", "/api/admin/platform/audit?run=" + runId, null);
    assertThat(audit.toString()).doesNotContain("SECRETVALUE");
  }

  @Test
  void aRunThatNeverEndsDiesAtItsDeadline() throws Exception {
    JsonNode result =
        call(
            "POST",
            BASE + "/run",
            "{\"agent\": \"slow\", \"command\": [\"sh\", \"-c\", \"while true; do :; done\"]}");
    assertThat(result.path("end").asText()).as(result.toString()).isEqualTo("deadline");
    assertThat(result.path("status").asText()).isEqualTo("deadline");
    assertThat(auditTypesOnceTornDown(result.path("run_id").asText()))
        .containsSubsequence(
            "agent_sandbox.launch", "agent_sandbox.timeout", "agent_sandbox.teardown");
  }

  @Test
  void anAsynchronousRunStreamsItsOutputAndCanBeKilled() throws Exception {
    ApiClient.Answer started =
        api.post(
            BASE + "/runs",
            admin,
            "{\"agent\": \"helper\", \"command\": [\"sh\", \"-c\", \"echo started; sleep 300\"]}");
    assertThat(started.status()).as(started.body()).isEqualTo(202);
    String runId = started.json().path("run_id").asText();
    assertThat(started.raw().headers().firstValue("Location")).hasValue(BASE + "/runs/" + runId);
    String status =
        await()
            .atMost(Duration.ofSeconds(90))
            .pollInterval(Duration.ofMillis(250))
            .until(
                () -> call("GET", BASE + "/runs/" + runId, null).path("status").asText(),
                s -> !s.equals("pending"));
    assertThat(status).isEqualTo("running");
    ApiClient.Answer killed = api.delete(BASE + "/runs/" + runId, admin);
    assertThat(killed.status()).as(killed.body()).isEqualTo(202);
    ApiClient.Answer output = api.get(BASE + "/runs/" + runId + "/output", admin);
    assertThat(output.status()).isEqualTo(200);
    assertThat(output.body()).contains("started");
    JsonNode done = call("GET", BASE + "/runs/" + runId, null);
    assertThat(done.path("status").asText()).as(done.toString()).isEqualTo("killed");
    assertThat(done.path("end").asText()).isEqualTo("killed");
    ApiClient.Answer again = api.delete(BASE + "/runs/" + runId, admin);
    assertThat(again.status()).isEqualTo(409);
    assertThat(auditTypesOnceTornDown(runId))
        .contains("agent_sandbox.kill", "agent_sandbox.teardown");
  }

  @Test
  void refusalsAreClearAndAudited() throws Exception {
    ApiClient.Answer env =
        api.post(
            BASE + "/run",
            admin,
            "{\"agent\": \"helper\", \"command\": [\"true\"], \"env\": {\"https_proxy\": \"http://evil:1\", \"LD_PRELOAD\": \"/x.so\"}}");
    assertThat(env.status()).isEqualTo(400);
    JsonNode envBody = env.json();
    assertThat(envBody.path("error").asText()).isEqualTo("env_refused");
    assertThat(envBody.path("problems").toString())
        .contains("env.https_proxy")
        .contains("env.LD_PRELOAD");
    ApiClient.Answer unknown =
        api.post(BASE + "/run", admin, "{\"agent\": \"stranger\", \"command\": [\"true\"]}");
    assertThat(unknown.status()).isEqualTo(404);
    assertThat(unknown.json().path("error").asText()).isEqualTo("agent_not_listed");
    JsonNode refused =
        call("GET", "/api/admin/platform/audit?type=agent_sandbox.refused&limit=100", null);
    assertThat(refused.toString()).contains("env_refused").contains("agent_not_listed");
  }

  @Test
  void requireRuntimeClassRefusesWhereTheDaemonOffersOnlyRunc() throws Exception {
    // The same daemon, but looking for gVisor under a name it does not have: it offers runc only.
    DockerBackendConfig noGvisor =
        DockerBackendConfig.builder().gvisorRuntime("no-such-runtime").build();
    Path dir = Files.createTempDirectory("asb-require-it");
    try (Store other = Store.open("jdbc:sqlite:" + dir.resolve("it.db"));
        AgentSandboxServer strict =
            AgentSandboxServer.start(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                other,
                new RunWiring(
                    List.of(new DockerBackend(docker, noGvisor)),
                    OperatorEgress.NONE,
                    RunSettings.defaults(instanceId + "strict"),
                    RunWiring.every(Duration.ofHours(1))))) {
      String token = other.tokens().create("strict-admin", Scopes.ALL, null).secret();
      ApiClient strictApi = new ApiClient(strict.baseUrl(), Duration.ofMinutes(3));
      ApiClient.Answer put =
          strictApi.put(
              BASE,
              token,
              "{\"enabled\": true, \"require_runtime_class\": true, \"reason\": \"it\","
                  + " \"agents\": {\"helper\": {\"allow\": [], \"image\": \""
                  + IMAGE
                  + "\"}}}");
      assertThat(put.status()).as(put.body()).isEqualTo(200);
      ApiClient.Answer run =
          strictApi.post(BASE + "/run", token, "{\"agent\": \"helper\", \"command\": [\"true\"]}");
      assertThat(run.status()).as(run.body()).isEqualTo(503);
      JsonNode body = run.json();
      assertThat(body.path("error").asText()).isEqualTo("runtime_class_required");
      assertThat(body.path("problems").toString()).contains("offers only runc");
    }
  }

  @Test
  void aControlPlaneSparesAnotherOnesRunsUntilTheirExpiry() throws Exception {
    // Two runs launched straight on the daemon, as another control plane would: one still within
    // its expiry, one past it. A fresh control plane with its own store reaps at start.
    DockerBackend backend = new DockerBackend(docker, DockerBackendConfig.defaults());
    Sandbox foreign =
        backend.launch(
            foreignSpec("foreignlive", Instant.now().plusSeconds(600)), SandboxListener.NONE);
    Sandbox expired =
        backend.launch(
            foreignSpec("foreignexpired", Instant.now().minusSeconds(60)), SandboxListener.NONE);
    Path dir = Files.createTempDirectory("asb-foreign-it");
    try (Store other = Store.open("jdbc:sqlite:" + dir.resolve("it.db"));
        AgentSandboxServer neighbour =
            AgentSandboxServer.start(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                other,
                new RunWiring(
                    List.of(backend),
                    OperatorEgress.NONE,
                    RunSettings.defaults(instanceId + "neighbour"),
                    RunWiring.every(Duration.ofHours(1))))) {
      await()
          .atMost(Duration.ofSeconds(60))
          .pollInterval(Duration.ofMillis(250))
          .untilAsserted(
              () ->
                  assertThat(DockerObjects.containersOfRun(docker, "foreignexpired"))
                      .as("past its expiry")
                      .isEmpty());
      assertThat(DockerObjects.containersOfRun(docker, "foreignlive"))
          .as("another control plane's live run")
          .isNotEmpty();
    } finally {
      foreign.teardown();
      expired.teardown();
    }
  }

  private static RunSpec foreignSpec(String runId, Instant expiresAt) {
    return new RunSpec(
        runId,
        "helper",
        IMAGE,
        List.of("sh", "-c", "sleep 120"),
        Map.of(),
        new RunEgress(AllowList.EMPTY, Optional.empty(), List.of(), Map.of()),
        new Resources(1, 256, 128),
        Duration.ofSeconds(120),
        expiresAt,
        false);
  }

  /**
   * The run's audit row types once its teardown row is there (bounded): the sandbox is removed
   * after the run's result is answered.
   */
  private static List<String> auditTypesOnceTornDown(String runId) {
    return await()
        .atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(250))
        .until(() -> auditTypes(runId), types -> types.contains("agent_sandbox.teardown"));
  }

  private static List<String> auditTypes(String runId) throws Exception {
    JsonNode rows = call("GET", "/api/admin/platform/audit?run=" + runId + "&limit=1000", null);
    List<String> types = new ArrayList<>();
    rows.path("rows").forEach(row -> types.add(row.path("type").asText()));
    return types;
  }

  /**
   * Labelled containers and networks of runs this test class started: those whose run is in this
   * test's store, or one of its foreign runs. Other engineers' tests share the daemon; their
   * sandboxes are not this test's to count.
   */
  private static List<String> ours() {
    List<String> found = new ArrayList<>();
    docker
        .listContainersCmd()
        .withShowAll(true)
        .withLabelFilter(Map.of(Labels.MANAGED_BY, Labels.MANAGER))
        .exec()
        .stream()
        .filter(c -> thisTests(c.getLabels()))
        .forEach(c -> found.add("container " + String.join(",", c.getNames())));
    docker
        .listNetworksCmd()
        .withFilter("label", List.of(Labels.MANAGED_BY + "=" + Labels.MANAGER))
        .exec()
        .stream()
        .filter(n -> thisTests(n.getLabels()))
        .forEach(n -> found.add("network " + n.getName()));
    return found;
  }

  private static boolean thisTests(Map<String, String> labels) {
    String runId = labels == null ? null : labels.get(Labels.RUN_ID);
    return runId != null
        && (runId.startsWith("foreign")
            || (dev.agentsandbox.runs.RunIds.valid(runId) && store.runs().find(runId).isPresent()));
  }

  /** One admin-API exchange as the admin, checked against openapi.json and asserted 2xx. */
  private static JsonNode call(String method, String path, String body) {
    return api.send(method, path, admin, body).successJson();
  }
}
