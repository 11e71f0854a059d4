package dev.agentsandbox.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.docker.DockerClients;
import dev.agentsandbox.testing.DockerObjects;
import dev.agentsandbox.testing.api.ApiClient;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A control plane killed with SIGKILL in the middle of a run leaves its containers and network
 * behind and the run marked live; the next start of the same instance marks the run failed and its
 * reaper removes everything the run left. The real packaged jar, a real process, a real daemon.
 */
class ServeCrashIT {
  private static final String BASE = "/api/admin/platform/agent-sandbox";
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
    ApiClient first = new ApiClient(base, Duration.ofSeconds(60));
    JsonNode put =
        send(
            first,
            "PUT",
            BASE,
            token,
            "{\"enabled\": true, \"backend\": \"docker\", \"reason\": \"ServeCrashIT\","
                + " \"agents\": {\"crash\": {\"allow\": [], \"image\": \"agent-sandbox/workload:dev\","
                + " \"ttl_seconds\": 600}}}");
    assertThat(put.path("version").asLong()).as(put.toString()).isEqualTo(1);
    JsonNode started =
        send(
            first,
            "POST",
            BASE + "/runs",
            token,
            "{\"agent\": \"crash\", \"command\": [\"sh\", \"-c\", \"sleep 600\"]}");
    String runId = started.path("run_id").asText();
    await("run " + runId + " to start")
        .atMost(Duration.ofSeconds(120))
        .pollInterval(Duration.ofMillis(250))
        .until(
            () -> send(first, "GET", BASE + "/runs/" + runId, token, null).path("status").asText(),
            "running"::equals);
    // Its containers, not just any object of the run (a volume alone would not show a sandbox).
    assertThat(DockerObjects.containersOfRun(docker, runId)).isNotEmpty();

    serve.destroyForcibly(); // SIGKILL: no shutdown hook, no teardown
    assertThat(serve.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(DockerObjects.containersOfRun(docker, runId))
        .as("left behind by the killed control plane")
        .isNotEmpty();

    String again = startServe(jar, data, db);
    ApiClient restarted = new ApiClient(again, Duration.ofSeconds(60));
    await()
        .atMost(Duration.ofSeconds(120))
        .pollInterval(Duration.ofMillis(500))
        .untilAsserted(
            () ->
                assertThat(DockerObjects.ofRun(docker, runId))
                    .as("reaped after the restart")
                    .isEmpty());
    JsonNode run = send(restarted, "GET", BASE + "/runs/" + runId, token, null);
    assertThat(run.path("status").asText()).as(run.toString()).isEqualTo("failed");
    // The new process never held the run: its output is answered from the store, not a 404.
    ApiClient.Answer output = new ApiClient(again).get(BASE + "/runs/" + runId + "/output", token);
    assertThat(output.status()).isEqualTo(200);
    // The reaper writes its teardown row once its whole pass is done, a moment after the last
    // resource is gone.
    String auditPath = "/api/admin/platform/audit?run=" + runId;
    String reader = token;
    await()
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(500))
        .untilAsserted(
            () ->
                assertThat(send(restarted, "GET", auditPath, reader, null).toString())
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

  private static JsonNode send(
      ApiClient api, String method, String path, String token, String body) {
    ApiClient.Answer response = api.send(method, path, token, body);
    assertThat(response.status())
        .as(method + " " + path + ": " + response.body())
        .isBetween(200, 299);
    return response.json();
  }
}
