package dev.agentsandbox.server.run;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
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
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Allow-lists from evidence, end to end on Docker: a workload is refused at several hosts; the
 * proposal built from its run's audit rows names the entries (a wildcard for three names under one
 * domain, an exact entry the instance egress policy still blocks) and the refusals no entry fixes;
 * its impact is previewed and it is saved under governance with the impact's counts in the audit
 * row; the next run reaches what the proposal allowed; and removing it again is previewed as a
 * tightening naming the run it would have broken. A real server on loopback, a real SQLite store,
 * the Docker backend with the local proxy and workload images, and an upstream on this host.
 */
class EgressProposalIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String BASE = "/api/admin/platform/agent-sandbox";
  private static final String IMAGE = "agent-sandbox/workload:dev";

  /** The upstream: a port-less link holding one address of the benchmarking range. */
  private static final String UPSTREAM_ADDRESS = "198.18.79.9";

  /** An address of that range no agent declares internal: a name answering it stays refused. */
  private static final String UNDECLARED_ADDRESS = "198.18.79.10";

  private static final String BODY = "hello from the proposal upstream";

  private static LinkServer upstream;
  private static Path dataDir;
  private static Store store;
  private static AgentSandboxServer server;
  private static ApiClient client;
  private static DockerClient docker;
  private static String admin;
  private static int port;

  @BeforeAll
  static void start() throws Exception {
    docker = DockerClients.fromEnvironment();
    Probe probe = new DockerBackend(docker, DockerBackendConfig.defaults()).probe();
    if (!probe.available()) {
      fail("EgressProposalIT needs a Docker daemon: " + probe.detail());
    }
    for (String image : List.of(IMAGE, DockerBackendConfig.DEFAULT_PROXY_IMAGE)) {
      try {
        docker.inspectImageCmd(image).exec();
      } catch (RuntimeException e) {
        fail("EgressProposalIT needs image " + image + " (run images/build.sh)");
      }
    }
    upstream = LinkServer.onLink("asb-prop0", UPSTREAM_ADDRESS, BODY);
    port = upstream.port();
    dataDir = Files.createTempDirectory("asb-proposal-it");
    store = Store.open("jdbc:sqlite:" + dataDir.resolve("it.db"));
    Map<String, List<String>> names =
        Map.of(
            "a.up.test", List.of(UPSTREAM_ADDRESS),
            "b.up.test", List.of(UPSTREAM_ADDRESS),
            "c.up.test", List.of(UPSTREAM_ADDRESS),
            "other.test", List.of(UPSTREAM_ADDRESS),
            "private.test", List.of(UNDECLARED_ADDRESS));
    server =
        AgentSandboxServer.start(
            new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
            store,
            new RunWiring(
                List.of(new DockerBackend(docker, DockerBackendConfig.defaults())),
                new OperatorEgress(names),
                RunSettings.defaults("proposalit" + System.nanoTime()),
                RunWiring.every(Duration.ofHours(1))));
    client = new ApiClient(server.baseUrl(), Duration.ofMinutes(3));
    admin = store.tokens().create("it-admin", Scopes.ALL, null).secret();
    call(
        "PUT",
        BASE,
        """
        {"enabled": true, "backend": "docker", "reason": "EgressProposalIT",
         "agents": {"prober": {"allow": ["private.test:%d"], "image": "%s", "ttl_seconds": 120,
                               "resources": {"cpus": 1, "memory_mb": 256, "pids": 128},
                               "internal": {"upstream": {"cidr": "%s/32", "ports": [%d]}}}}}
        """
            .formatted(port, IMAGE, UPSTREAM_ADDRESS, port));
    // The organisation allows the prober the up.test names and private.test, not other.test.
    call(
        "PUT",
        "/api/admin/platform/egress-policy",
        """
        {"scopes": {"prober": {"allow": ["*.up.test:%d", "private.test:%d"]}}, "reason": "IT"}
        """
            .formatted(port, port));
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

  /** Tries each host once through the proxy and prints the status it got (200 or a refusal). */
  private static String script() {
    StringBuilder script = new StringBuilder();
    for (String host :
        List.of(
            "a.up.test",
            "b.up.test",
            "c.up.test",
            "other.test",
            "private.test",
            UPSTREAM_ADDRESS)) {
      script
          .append("printf '")
          .append(host)
          .append("='; curl -sS -m 20 -o /dev/null -w '%{http_code}' http://")
          .append(host)
          .append(':')
          .append(port)
          .append("/; echo; ");
    }
    return script.append("exit 0").toString();
  }

  private static JsonNode runOnce() throws Exception {
    JsonNode result =
        call(
            "POST",
            BASE + "/run",
            JSON.writeValueAsString(
                Map.of("agent", "prober", "command", List.of("sh", "-c", script()))));
    assertThat(result.path("end").asText()).as(result.toString()).isEqualTo("exit");
    String runId = result.path("run_id").asText();
    // The run's rows are all written once its teardown row is.
    await()
        .atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(250))
        .until(
            () ->
                store
                    .audit()
                    .query(new AuditQuery("agent_sandbox.teardown", null, runId, null, null, 5)),
            rows -> !rows.isEmpty());
    return result;
  }

  @Test
  void aRefusedWorkloadsProposalIsSavedAndTheNextRunIsAllowed() throws Exception {
    JsonNode first = runOnce();
    String firstRun = first.path("run_id").asText();
    String firstOutput = first.path("output_tail").asText();
    assertThat(firstOutput)
        .contains("a.up.test=403", "other.test=403", "private.test=403", UPSTREAM_ADDRESS + "=403");

    JsonNode proposal = call("GET", BASE + "/agents/prober/egress-proposal?since=1d", null);
    List<String> entries = new ArrayList<>();
    proposal.path("entries").forEach(e -> entries.add(e.path("entry").asText()));
    assertThat(entries).containsExactly("*.up.test:" + port, "other.test:" + port);
    JsonNode wildcard = proposal.path("entries").get(0);
    assertThat(texts(wildcard.path("hosts")))
        .containsExactly("a.up.test", "b.up.test", "c.up.test");
    assertThat(wildcard.path("runs").asInt()).isEqualTo(1);
    assertThat(texts(wildcard.path("example_runs"))).containsExactly(firstRun);
    assertThat(wildcard.path("blocked_by_instance_policy").asBoolean()).isFalse();
    JsonNode other = proposal.path("entries").get(1);
    assertThat(other.path("blocked_by_instance_policy").asBoolean()).isTrue();
    assertThat(texts(other.path("instance_policy_blocks"))).containsExactly("other.test:" + port);
    List<String> stays = new ArrayList<>();
    proposal
        .path("not_fixable")
        .forEach(n -> stays.add(n.path("host").asText() + " " + n.path("why").asText()));
    assertThat(stays)
        .containsExactlyInAnyOrder(
            "private.test non-public-address", UPSTREAM_ADDRESS + " ip-literal");

    ObjectNode document = editable(call("GET", BASE, null));
    ((ObjectNode) document.path("agents").path("prober"))
        .set("allow", proposal.path("allow_after"));
    document.put("version", proposal.path("version").asLong());
    document.put("reason", "EgressProposalIT: the proposal");
    JsonNode preview = call("PUT", BASE + "?dry_run=true", document.toString());
    JsonNode impact = preview.path("change").path("impact").path("agents").get(0);
    assertThat(impact.path("agent").asText()).isEqualTo("prober");
    // other.test stays refused by the instance policy, so only the three names would pass.
    assertThat(impact.path("would_allow").path("hosts").asInt()).isEqualTo(3);
    assertThat(impact.path("would_allow").path("runs").asInt()).isEqualTo(1);
    assertThat(impact.path("would_refuse").path("runs").asInt()).isZero();

    JsonNode saved = call("PUT", BASE, document.toString());
    assertThat(saved.path("change").path("weakening").asBoolean()).isTrue();
    AuditRow update =
        store
            .audit()
            .query(new AuditQuery("agent_sandbox.config.update", null, null, null, null, 10))
            .getLast();
    JsonNode counts = update.data().path("impact").path("agents").path("prober");
    assertThat(counts.path("would_allow").path("hosts").asInt()).isEqualTo(3);
    assertThat(counts.path("would_allow").path("runs").asInt()).isEqualTo(1);

    JsonNode second = runOnce();
    String secondRun = second.path("run_id").asText();
    String output = second.path("output_tail").asText();
    assertThat(output)
        .contains("a.up.test=200", "b.up.test=200", "c.up.test=200")
        .contains("other.test=403", "private.test=403");

    JsonNode after = call("GET", BASE + "/agents/prober/egress-proposal?since=1d", null);
    assertThat(after.path("entries")).as("nothing left that an entry fixes").isEmpty();

    ObjectNode narrower = editable(call("GET", BASE, null));
    ((ObjectNode) narrower.path("agents").path("prober"))
        .set("allow", JSON.createArrayNode().add("private.test:" + port));
    narrower.put("version", saved.path("version").asLong());
    JsonNode tightening = call("PUT", BASE + "?dry_run=true", narrower.toString());
    JsonNode broken =
        tightening.path("change").path("impact").path("agents").get(0).path("would_refuse");
    assertThat(broken.path("runs").asInt()).isEqualTo(1);
    assertThat(broken.path("hosts").asInt()).isEqualTo(3);
    assertThat(texts(broken.path("top").get(0).path("example_runs"))).containsExactly(secondRun);
    assertThat(ours()).as("nothing labelled outlives the runs").isEmpty();
  }

  private static List<String> texts(JsonNode array) {
    List<String> texts = new ArrayList<>();
    array.forEach(n -> texts.add(n.asText()));
    return texts;
  }

  private static ObjectNode editable(JsonNode view) {
    ObjectNode document = view.deepCopy();
    for (String computed : List.of("version", "updated_at", "updated_by", "change")) {
      document.remove(computed);
    }
    document.path("agents").forEach(agent -> ((ObjectNode) agent).remove("effective_allow"));
    return document;
  }

  private static List<String> ours() {
    return await()
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(200))
        .until(
            () -> {
              List<String> found = new ArrayList<>();
              docker
                  .listContainersCmd()
                  .withShowAll(true)
                  .withLabelFilter(
                      Map.of(Labels.MANAGED_BY, Labels.MANAGER, Labels.AGENT, "prober"))
                  .exec()
                  .forEach(c -> found.add("container " + String.join(",", c.getNames())));
              return found;
            },
            List::isEmpty);
  }

  /** One admin-API exchange as the admin, checked against openapi.json and asserted 2xx. */
  private static JsonNode call(String method, String path, String body) {
    return client.send(method, path, admin, body).successJson();
  }
}
