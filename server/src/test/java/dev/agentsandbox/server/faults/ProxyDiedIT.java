package dev.agentsandbox.server.faults;

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
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.runs.OperatorEgress;
import dev.agentsandbox.runs.RunSettings;
import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.server.RunWiring;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.testing.DockerObjects;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Fault: the run's proxy container is killed (SIGKILL through the daemon) while its workload loops.
 * The run must end at once as failed with its own reason ({@code proxy_died}) and audit row, and
 * nothing of the run may be left on the daemon. A real server on loopback, a real SQLite store, the
 * real Docker backend and images, on a Docker daemon of the test's own ({@link PrivateDockerd}), so
 * that killing containers can touch nothing but the test's and the test needs nothing of the
 * machine's daemon but its images (issue 26 item 19).
 */
class ProxyDiedIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String BASE = "/api/admin/platform/agent-sandbox";
  private static final String IMAGE = "agent-sandbox/workload:dev";
  private final HttpClient http = HttpClient.newHttpClient();
  private String baseUrl;
  private String admin;

  @Test
  void aKilledProxyEndsTheRunAsProxyDiedAndLeavesNothing() throws Exception {
    try (PrivateDockerd dockerd =
        PrivateDockerd.start(
            "ProxyDiedIT", List.of(IMAGE, DockerBackendConfig.DEFAULT_PROXY_IMAGE))) {
      killTheProxyMidRun(dockerd.client());
    }
  }

  private void killTheProxyMidRun(DockerClient docker) throws Exception {
    Probe probe = new DockerBackend(docker, DockerBackendConfig.defaults()).probe();
    if (!probe.available()) {
      fail("ProxyDiedIT needs a Docker daemon: " + probe.detail());
    }
    Path data = Files.createTempDirectory("asb-proxy-died-it");
    String runId = null;
    try (Store store = Store.open("jdbc:sqlite:" + data.resolve("it.db"));
        AgentSandboxServer server =
            AgentSandboxServer.start(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                store,
                new RunWiring(
                    List.of(new DockerBackend(docker, DockerBackendConfig.defaults())),
                    new OperatorEgress(Map.of()),
                    RunSettings.defaults("proxydiedit" + System.nanoTime()),
                    RunWiring.every(Duration.ofHours(1))))) {
      baseUrl = server.baseUrl();
      admin = store.tokens().create("it-admin", Scopes.ALL, null).secret();
      call(
          "PUT",
          BASE,
          """
          {"enabled": true, "backend": "docker", "reason": "ProxyDiedIT",
           "agents": {"loop": {"allow": [], "image": "%s", "ttl_seconds": 300}}}
          """
              .formatted(IMAGE));
      JsonNode started =
          call(
              "POST",
              BASE + "/runs",
              JSON.writeValueAsString(
                  Map.of(
                      "agent",
                      "loop",
                      "command",
                      List.of(
                          "sh",
                          "-c",
                          "i=0; while [ $i -lt 280 ]; do echo tick $i; i=$((i+1)); sleep 1; done"))));
      runId = started.path("run_id").asText();
      String id = runId;
      await("run " + runId + " looping")
          .atMost(Duration.ofSeconds(120))
          .pollInterval(Duration.ofMillis(250))
          .until(
              () -> {
                JsonNode run = call("GET", BASE + "/runs/" + id, null);
                return run.path("status").asText().equals("running")
                    && run.path("output_tail").asText().contains("tick");
              });

      docker.killContainerCmd("asb-" + runId + "-proxy").exec();

      // Without the watch on the proxy, the loop runs on for minutes; 60 s is a bound, not a
      // timing.
      JsonNode ended =
          await("run " + runId + " to end after its proxy died")
              .atMost(Duration.ofSeconds(60))
              .pollInterval(Duration.ofMillis(250))
              .until(
                  () -> call("GET", BASE + "/runs/" + id, null),
                  run -> !run.path("status").asText().equals("running"));
      assertThat(ended.path("status").asText()).as(ended.toString()).isEqualTo("failed");
      assertThat(ended.path("end").asText()).as(ended.toString()).isEqualTo("proxy_died");

      // The sandbox is removed after the result is answered; its teardown row follows.
      String ofRun = runId;
      JsonNode rows =
          await()
              .atMost(Duration.ofSeconds(60))
              .pollInterval(Duration.ofMillis(250))
              .until(
                  () ->
                      call("GET", "/api/admin/platform/audit?run=" + ofRun + "&limit=1000", null)
                          .path("rows"),
                  r -> r.toString().contains("agent_sandbox.teardown"));
      List<String> types = new ArrayList<>();
      JsonNode died = null;
      for (JsonNode row : rows) {
        types.add(row.path("type").asText());
        if (row.path("type").asText().equals("agent_sandbox.proxy_died")) {
          died = row;
        }
      }
      assertThat(types)
          .as(rows.toString())
          .contains("agent_sandbox.launch", "agent_sandbox.proxy_died", "agent_sandbox.teardown")
          .doesNotContain("agent_sandbox.timeout", "agent_sandbox.failure");
      assertThat(died.path("data").path("message").asText())
          .contains("egress proxy stopped")
          .contains("status 137");
      JsonNode teardown = null;
      for (JsonNode row : rows) {
        if (row.path("type").asText().equals("agent_sandbox.teardown")) {
          teardown = row;
        }
      }
      assertThat(teardown.path("data").path("end").asText()).isEqualTo("proxy_died");
      assertThat(teardown.path("data").path("removed").asBoolean())
          .as(teardown.toString())
          .isTrue();
      assertThat(DockerObjects.ofRun(docker, runId)).as("left on the daemon").isEmpty();
      JsonNode verify = call("GET", "/api/admin/platform/audit/verify", null);
      assertThat(verify.path("ok").asBoolean()).as(verify.toString()).isTrue();
    } finally {
      if (runId != null) {
        removeQuietly(docker, runId);
      }
    }
  }

  /** Whatever the test's run left, removed so that a failed assertion leaks nothing. */
  static void removeQuietly(DockerClient docker, String runId) {
    try {
      docker
          .listContainersCmd()
          .withShowAll(true)
          .withLabelFilter(Map.of(Labels.RUN_ID, runId))
          .exec()
          .forEach(c -> docker.removeContainerCmd(c.getId()).withForce(true).exec());
      docker
          .listNetworksCmd()
          .withFilter("label", List.of(Labels.RUN_ID + "=" + runId))
          .exec()
          .forEach(n -> docker.removeNetworkCmd(n.getId()).exec());
      docker
          .listVolumesCmd()
          .withFilter("label", List.of(Labels.RUN_ID + "=" + runId))
          .exec()
          .getVolumes()
          .forEach(v -> docker.removeVolumeCmd(v.getName()).exec());
    } catch (RuntimeException e) {
      System.err.println("cleaning up run " + runId + ": " + e.getMessage());
    }
  }

  private JsonNode call(String method, String path, String body) throws Exception {
    HttpRequest.Builder builder =
        HttpRequest.newBuilder(URI.create(baseUrl + path))
            .timeout(Duration.ofSeconds(60))
            .header("Authorization", "Bearer " + admin);
    if (body == null) {
      builder.method(method, HttpRequest.BodyPublishers.noBody());
    } else {
      builder
          .header("Content-Type", "application/json")
          .method(method, HttpRequest.BodyPublishers.ofString(body));
    }
    HttpResponse<String> response =
        http.send(builder.build(), HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode())
        .as(method + " " + path + ": " + response.body())
        .isBetween(200, 299);
    return JSON.readTree(response.body());
  }
}
