package dev.agentsandbox.server.run;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.docker.DockerBackend;
import dev.agentsandbox.backend.docker.DockerBackendConfig;
import dev.agentsandbox.backend.docker.DockerClients;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.runs.OperatorEgress;
import dev.agentsandbox.runs.RunSettings;
import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.server.RunWiring;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.AuditRow;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.testing.LinkServer;
import dev.agentsandbox.testing.api.ApiClient;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The warm pool end to end: real Docker, the real proxy image, a real upstream on an address only
 * this host carries. A warm sandbox serves its run through its own proxy; after an allow-list is
 * tightened, the very next run — before any upkeep pass could drain the pool — never reaches the
 * host the tightening removed; the pool refills under the new policy; and closing the control plane
 * removes every warm sandbox.
 */
class WarmPoolIT {
  private static final String IMAGE = "agent-sandbox/workload:dev";
  private static final String BASE = "/api/admin/platform/agent-sandbox";
  // Unique per run: an earlier run's leftovers (a crashed JVM's) never count as this run's.
  private static final String AGENT = "warmed" + Long.toString(System.nanoTime(), 36);
  private static final String ADDRESS = "198.18.79.2";
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration PREPARED = Duration.ofMinutes(3);

  private static LinkServer upstream;
  private static final List<String> HOSTS = new CopyOnWriteArrayList<>();
  private static Path dataDir;
  private static Store store;
  private static AgentSandboxServer server;
  private static DockerClient docker;
  private static String admin;

  /** Every admin-API exchange, checked against openapi.json; a run may take minutes to answer. */
  private static ApiClient api;

  @BeforeAll
  static void start() throws Exception {
    docker = DockerClients.fromEnvironment();
    Probe probe = new DockerBackend(docker, DockerBackendConfig.defaults()).probe();
    if (!probe.available()) {
      fail("WarmPoolIT needs a Docker daemon: " + probe.detail());
    }
    for (String image : List.of(IMAGE, DockerBackendConfig.DEFAULT_PROXY_IMAGE)) {
      try {
        docker.inspectImageCmd(image).exec();
      } catch (RuntimeException e) {
        fail("WarmPoolIT needs image " + image + " (run images/build.sh)");
      }
    }
    upstream = LinkServer.onLink("asb-warm0", ADDRESS, "hello from upstream");
    upstream.handle(
        "/w",
        exchange -> {
          String host = exchange.getRequestHeaders().getFirst("Host");
          HOSTS.add(host == null ? "" : host);
          byte[] body = "ok".getBytes(StandardCharsets.UTF_8);
          exchange.sendResponseHeaders(200, body.length);
          exchange.getResponseBody().write(body);
          exchange.close();
        });
    dataDir = Files.createTempDirectory("asb-warm-it");
    store = Store.open("jdbc:sqlite:" + dataDir.resolve("it.db"));
    server =
        AgentSandboxServer.start(
            new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
            store,
            new RunWiring(
                List.of(new DockerBackend(docker, DockerBackendConfig.defaults())),
                new OperatorEgress(
                    Map.of("kept.test", List.of(ADDRESS), "removed.test", List.of(ADDRESS))),
                RunSettings.defaults("warmpoolit" + System.nanoTime()),
                RunWiring.every(Duration.ofHours(1))));
    api = new ApiClient(server.baseUrl(), Duration.ofMinutes(3));
    admin = store.tokens().create("it-admin", Scopes.ALL, null).secret();
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
  void aTighteningDrainsThePoolBeforeAnyRunUsesTheOldPolicy() throws Exception {
    int port = upstream.port();
    putConfig(0, "\"kept.test:" + port + "\", \"removed.test:" + port + "\"", true);
    awaitReady(1);

    // Before: a warm run reaches both hosts through its own proxy.
    JsonNode before = run(script(port));
    assertThat(before.path("output_tail").asText())
        .as(before.toString())
        .contains("kept=200")
        .contains("removed=200");
    assertThat(launch(before.path("run_id").asText()).data().path("warm").asBoolean()).isTrue();
    assertThat(List.copyOf(HOSTS)).contains("removed.test:" + port);
    awaitReady(1);
    int servedBefore = List.copyOf(HOSTS).size();

    // Tightened; the run right after must not reach removed.test, whatever the pool held.
    putConfig(1, "\"kept.test:" + port + "\"", false);
    JsonNode after = run(script(port));
    assertThat(after.path("output_tail").asText())
        .as(after.toString())
        .contains("kept=200")
        .contains("removed=403");
    List<String> served = List.copyOf(HOSTS);
    List<String> since = served.subList(servedBefore, served.size());
    assertThat(since).doesNotContain("removed.test:" + port).contains("kept.test:" + port);

    // The pool refills under the new policy, and a warm run gets the new policy.
    awaitReady(1);
    JsonNode warmAgain = run(script(port));
    assertThat(launch(warmAgain.path("run_id").asText()).data().path("warm").asBoolean()).isTrue();
    assertThat(warmAgain.path("output_tail").asText()).contains("kept=200").contains("removed=403");
    assertThat(metrics()).contains("agent_sandbox_warm_sandboxes_ended_total{outcome=\"drained\"}");

    // Closing the control plane removes every warm sandbox: nothing of the agent's is left.
    server.close();
    server = null;
    assertThat(ours()).isEmpty();
  }

  private static String script(int port) {
    return "for h in kept removed; do printf '%s=' $h; curl -sS -m 20 -o /dev/null -w '%{http_code}'"
        + " http://$h.test:"
        + port
        + "/w/; echo; done";
  }

  private static void putConfig(long version, String allow, boolean weakening) throws Exception {
    String body =
        """
        {"enabled": true, "backend": "docker", %s
         "agents": {"%s": {"allow": [%s], "image": "%s", "ttl_seconds": 120, "warm": 1,
                           "resources": {"cpus": 1, "memory_mb": 256, "pids": 128},
                           "internal": {"upstream": {"cidr": "%s/32", "ports": [%d]}}}}}
        """
            .formatted(
                weakening ? "\"reason\": \"WarmPoolIT\"," : "",
                AGENT,
                allow,
                IMAGE,
                ADDRESS,
                upstream.port());
    JsonNode put = api.put(BASE, admin, body, "If-Match", "\"" + version + "\"").successJson();
    assertThat(put.path("version").asLong()).as(put.toString()).isEqualTo(version + 1);
  }

  private static JsonNode run(String script) throws Exception {
    return api.post(
            BASE + "/run",
            admin,
            JSON.writeValueAsString(Map.of("agent", AGENT, "command", List.of("sh", "-c", script))))
        .successJson();
  }

  private static AuditRow launch(String runId) {
    return store
        .audit()
        .query(new AuditQuery("agent_sandbox.launch", null, runId, null, null, 10))
        .get(0);
  }

  private static void awaitReady(int ready) {
    Pattern line = Pattern.compile("agent_sandbox_warm_sandboxes\\{state=\"ready\"} ([0-9.]+)");
    await()
        .atMost(PREPARED)
        .pollInterval(Duration.ofMillis(250))
        .until(
            () -> {
              Matcher m = line.matcher(metrics());
              return m.find() && Double.parseDouble(m.group(1)) >= ready;
            });
  }

  /** The Prometheus text (GET /metrics is in openapi.json, so it is checked too). */
  private static String metrics() {
    return api.get("/metrics", admin).body();
  }

  /** Containers, networks and volumes of this test's agent. */
  private static List<String> ours() {
    List<String> found = new ArrayList<>();
    String label = Labels.AGENT + "=" + AGENT;
    docker
        .listContainersCmd()
        .withShowAll(true)
        .withLabelFilter(Map.of(Labels.AGENT, AGENT))
        .exec()
        .forEach(c -> found.add("container " + String.join(",", c.getNames())));
    docker
        .listNetworksCmd()
        .withFilter("label", List.of(label))
        .exec()
        .forEach(n -> found.add("network " + n.getName()));
    var volumes = docker.listVolumesCmd().withFilter("label", List.of(label)).exec().getVolumes();
    if (volumes != null) {
      volumes.forEach(v -> found.add("volume " + v.getName()));
    }
    return found;
  }
}
