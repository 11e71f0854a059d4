package dev.agentsandbox.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.docker.DockerClients;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A control plane killed with SIGKILL in the middle of a run leaves its containers and network
 * behind and the run marked live; the next start of the same instance marks the run failed and its
 * reaper removes everything the run left. The real packaged jar, a real process, a real daemon.
 */
class ServeCrashIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String BASE = "/api/admin/platform/agent-sandbox";
  private final HttpClient http = HttpClient.newHttpClient();
  private Process serve;

  @AfterEach
  void stop() throws InterruptedException {
    if (serve != null && serve.isAlive()) {
      serve.destroy();
      serve.waitFor(60, TimeUnit.SECONDS);
    }
  }

  @Test
  void theNextStartRecoversTheRunAndReapsWhatTheKilledOneLeft() throws Exception {
    Path jar = Path.of("target", "agent-sandbox.jar");
    assertThat(jar).as("the packaged CLI jar (failsafe runs after package)").exists();
    DockerClient docker = DockerClients.fromEnvironment();
    Path data = Files.createTempDirectory("asb-crash-it");
    String db = "jdbc:sqlite:" + data.resolve("store.db");

    String base = startServe(jar, data, db);
    String token = Files.readString(data.resolve("admin-token"), StandardCharsets.UTF_8).strip();
    JsonNode put =
        send(
            "PUT",
            base + BASE,
            token,
            "{\"enabled\": true, \"backend\": \"docker\", \"reason\": \"ServeCrashIT\","
                + " \"agents\": {\"crash\": {\"allow\": [], \"image\": \"agent-sandbox/workload:dev\","
                + " \"ttl_seconds\": 600}}}");
    assertThat(put.path("version").asLong()).as(put.toString()).isEqualTo(1);
    JsonNode started =
        send(
            "POST",
            base + BASE + "/runs",
            token,
            "{\"agent\": \"crash\", \"command\": [\"sh\", \"-c\", \"sleep 600\"]}");
    String runId = started.path("run_id").asText();
    String running = base;
    await("run " + runId + " to start")
        .atMost(Duration.ofSeconds(120))
        .pollInterval(Duration.ofMillis(250))
        .until(
            () ->
                send("GET", running + BASE + "/runs/" + runId, token, null).path("status").asText(),
            "running"::equals);
    assertThat(resourcesOf(docker, runId)).isNotEmpty();

    serve.destroyForcibly(); // SIGKILL: no shutdown hook, no teardown
    assertThat(serve.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(resourcesOf(docker, runId))
        .as("left behind by the killed control plane")
        .isNotEmpty();

    base = startServe(jar, data, db);
    await()
        .atMost(Duration.ofSeconds(120))
        .pollInterval(Duration.ofMillis(500))
        .untilAsserted(
            () -> assertThat(resourcesOf(docker, runId)).as("reaped after the restart").isEmpty());
    JsonNode run = send("GET", base + BASE + "/runs/" + runId, token, null);
    assertThat(run.path("status").asText()).as(run.toString()).isEqualTo("failed");
    // The new process never held the run: its output is answered from the store, not a 404.
    HttpResponse<String> output =
        http.send(
            HttpRequest.newBuilder(URI.create(base + BASE + "/runs/" + runId + "/output"))
                .header("Authorization", "Bearer " + token)
                .timeout(Duration.ofSeconds(30))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(output.statusCode()).isEqualTo(200);
    // The reaper writes its teardown row once its whole pass is done, a moment after the last
    // resource is gone.
    String auditUrl = base + "/api/admin/platform/audit?run=" + runId;
    String reader = token;
    await()
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(500))
        .untilAsserted(
            () ->
                assertThat(send("GET", auditUrl, reader, null).toString())
                    .contains("agent_sandbox.launch")
                    .contains("recovery")
                    .contains("\"by\":\"reaper\""));
  }

  private String startServe(Path jar, Path data, String db)
      throws IOException, InterruptedException {
    String java = ProcessHandle.current().info().command().orElse("java");
    serve =
        new ProcessBuilder(
                java,
                "-jar",
                jar.toString(),
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--db",
                db,
                "--data-dir",
                data.toString(),
                "--instance-id",
                "crash-it",
                "--reap-every",
                "2")
            .redirectErrorStream(true)
            .start();
    return CliProcess.awaitListening(serve);
  }

  private JsonNode send(String method, String url, String token, String body) throws Exception {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create(url))
            .timeout(Duration.ofSeconds(60))
            .header("Authorization", "Bearer " + token);
    if (body == null) {
      request.method(method, HttpRequest.BodyPublishers.noBody());
    } else {
      request
          .header("Content-Type", "application/json")
          .method(method, HttpRequest.BodyPublishers.ofString(body));
    }
    HttpResponse<String> response =
        http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode())
        .as(method + " " + url + ": " + response.body())
        .isBetween(200, 299);
    return JSON.readTree(response.body());
  }

  private static List<String> resourcesOf(DockerClient docker, String runId) {
    List<String> found = new java.util.ArrayList<>();
    docker
        .listContainersCmd()
        .withShowAll(true)
        .withLabelFilter(Map.of(Labels.RUN_ID, runId))
        .exec()
        .forEach(c -> found.add("container " + String.join(",", c.getNames())));
    docker
        .listNetworksCmd()
        .withFilter("label", List.of(Labels.RUN_ID + "=" + runId))
        .exec()
        .forEach(n -> found.add("network " + n.getName()));
    return found;
  }
}
