package dev.agentsandbox.server.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.dockerjava.api.DockerClient;
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
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Fault: the Docker daemon restarted mid-run (live-restore off, as on this project's hosts: the
 * daemon stops every container when it stops). The daemon is the test's own ({@link
 * PrivateDockerd}: its own socket, data root, exec root and containerd, the images loaded from the
 * host's daemon), so the test passes whatever daemon already runs on the machine and never stops or
 * restarts it (issue 26 item 19: after {@code scripts/serve.sh} had started the host's daemon,
 * {@code scripts/test.sh} failed here). The test stops its daemon (SIGTERM) while a run loops and
 * starts it again on the same data root. The run must end as failed with a failure row saying the
 * daemon went away, the control plane must keep serving, the reaper must remove what the run left
 * once the daemon is back, and a new run must work.
 */
class DockerRestartIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String BASE = "/api/admin/platform/agent-sandbox";
  private static final String IMAGE = "agent-sandbox/workload:dev";
  private final HttpClient http = HttpClient.newHttpClient();
  private String baseUrl;
  private String admin;

  @Test
  void aRunCutByADaemonRestartFailsClearlyAndTheReaperCleansUpOnceItIsBack() throws Exception {
    try (PrivateDockerd dockerd =
        PrivateDockerd.start(
            "DockerRestartIT", List.of(IMAGE, DockerBackendConfig.DEFAULT_PROXY_IMAGE))) {
      restartMidRun(dockerd);
    }
  }

  private void restartMidRun(PrivateDockerd dockerd) throws Exception {
    DockerClient docker = dockerd.client();
    Probe probe = new DockerBackend(docker, DockerBackendConfig.defaults()).probe();
    if (!probe.available()) {
      fail("DockerRestartIT needs a Docker daemon: " + probe.detail());
    }
    Path data = Files.createTempDirectory("asb-docker-restart-it");
    String runId = null;
    try (Store store = Store.open("jdbc:sqlite:" + data.resolve("it.db"));
        AgentSandboxServer server =
            AgentSandboxServer.start(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                store,
                new RunWiring(
                    List.of(new DockerBackend(docker, DockerBackendConfig.defaults())),
                    new OperatorEgress(Map.of()),
                    RunSettings.defaults("dockerrestartit" + System.nanoTime()),
                    RunWiring.every(Duration.ofSeconds(2))))) {
      baseUrl = server.baseUrl();
      admin = store.tokens().create("it-admin", Scopes.ALL, null).secret();
      call(
          "PUT",
          BASE,
          """
          {"enabled": true, "backend": "docker", "reason": "DockerRestartIT",
           "agents": {"loop": {"allow": [], "image": "%s", "ttl_seconds": 300}}}
          """
              .formatted(IMAGE));
      runId = startLoop();
      String id = runId;

      dockerd.stop();
      JsonNode ended =
          await("run " + runId + " to end once the daemon is gone")
              .atMost(Duration.ofSeconds(120))
              .pollInterval(Duration.ofMillis(500))
              .until(
                  () -> call("GET", BASE + "/runs/" + id, null),
                  run -> !run.path("status").asText().equals("running"));
      assertThat(ended.path("status").asText()).as(ended.toString()).isEqualTo("failed");
      assertThat(ended.path("end").asText()).as(ended.toString()).isEqualTo("error");
      assertThat(call("GET", "/healthz", null).path("status").asText()).isEqualTo("ok");

      dockerd.start();
      await("the reaper to remove what run " + runId + " left, once the daemon is back")
          .atMost(Duration.ofSeconds(120))
          .pollInterval(Duration.ofSeconds(1))
          .untilAsserted(() -> assertThat(DockerObjects.ofRun(docker, id)).as("left").isEmpty());
      String auditUrl = "/api/admin/platform/audit?run=" + runId + "&limit=1000";
      // The run's own teardown row is written once its removal has ended, after its result.
      JsonNode rows =
          await("a teardown row of run " + runId)
              .atMost(Duration.ofSeconds(60))
              .pollInterval(Duration.ofMillis(500))
              .until(
                  () -> call("GET", auditUrl, null).path("rows"),
                  r -> r.toString().contains("agent_sandbox.teardown"));
      String failure = null;
      boolean removedByTheRun = false;
      for (JsonNode row : rows) {
        if (row.path("type").asText().equals("agent_sandbox.failure")) {
          failure = row.path("data").path("message").asText();
        }
        if (row.path("type").asText().equals("agent_sandbox.teardown")
            && !row.path("data").has("by")) {
          removedByTheRun = row.path("data").path("removed").asBoolean();
        }
      }
      if (!removedByTheRun) {
        // The daemon was gone before the run's own teardown: the reaper removed it and says so.
        await("the reaper's teardown row")
            .atMost(Duration.ofSeconds(30))
            .pollInterval(Duration.ofMillis(500))
            .untilAsserted(
                () ->
                    assertThat(call("GET", auditUrl, null).toString())
                        .contains("\"by\":\"reaper\""));
      }
      System.out.println(
          "DockerRestartIT: removed by the run's own teardown: "
              + removedByTheRun
              + "; the failure row says: "
              + failure);
      assertThat(failure).as(rows.toString()).isNotNull().contains("Docker daemon");

      // The same control plane, the same client: a new run works.
      JsonNode after =
          call(
              "POST",
              BASE + "/run",
              JSON.writeValueAsString(
                  Map.of("agent", "loop", "command", List.of("sh", "-c", "echo back; exit 4"))));
      assertThat(after.path("end").asText()).as(after.toString()).isEqualTo("exit");
      assertThat(after.path("exit_status").asInt()).isEqualTo(4);
      JsonNode verify = call("GET", "/api/admin/platform/audit/verify", null);
      assertThat(verify.path("ok").asBoolean()).as(verify.toString()).isTrue();
    } finally {
      if (!dockerd.running()) {
        dockerd.start();
      }
      if (runId != null) {
        ProxyDiedIT.removeQuietly(docker, runId);
      }
    }
  }

  private String startLoop() throws Exception {
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
    String runId = started.path("run_id").asText();
    await("run " + runId + " looping")
        .atMost(Duration.ofSeconds(120))
        .pollInterval(Duration.ofMillis(250))
        .until(
            () -> {
              JsonNode run = call("GET", BASE + "/runs/" + runId, null);
              return run.path("status").asText().equals("running")
                  && run.path("output_tail").asText().contains("tick");
            });
    return runId;
  }

  private JsonNode call(String method, String path, String body) throws Exception {
    HttpRequest.Builder builder =
        HttpRequest.newBuilder(URI.create(baseUrl + path))
            .timeout(Duration.ofSeconds(180))
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
