package dev.agentsandbox.server.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.artifacts.FolderArtifactStore;
import dev.agentsandbox.backend.SandboxBackend;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.runs.OperatorEgress;
import dev.agentsandbox.runs.RunContractServices;
import dev.agentsandbox.runs.RunSettings;
import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.server.RunWiring;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.testing.api.ApiClient;
import java.io.ByteArrayOutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Sessions end to end on a real backend, the same for each (its subclasses name the backend): the
 * real server on loopback, real SQLite, the locally built images ({@code
 * agent-sandbox/clients:dev}: python3 in the workload). A session of 50 steps builds and tests a
 * small Python project put in with {@code PUT files}, with one refused connection among them, and
 * its timeline reconstructs every step with its decisions; a link the workload plants is never
 * followed by a file operation; and nothing of either session is left afterwards.
 */
abstract class SessionEndToEndContract {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String BASE = "/api/admin/platform/agent-sandbox";
  static final String IMAGE = "agent-sandbox/clients:dev";
  private static Path data;
  private static Leftovers leftovers;
  private static Store store;
  private static AgentSandboxServer server;
  private static String admin;

  /** Every admin-API exchange, checked against openapi.json; a step may take minutes. */
  private static ApiClient api;

  private static final List<String> runIds = new ArrayList<>();

  /** What a backend left of a run: empty once everything is gone. */
  interface Leftovers {
    List<String> of(String runId);
  }

  /** Starts the server on {@code backend}; each subclass calls it from its {@code @BeforeAll}. */
  static void start(SandboxBackend backend, Leftovers left, int ttlSeconds) throws Exception {
    leftovers = left;
    data = Files.createTempDirectory("asb-session-it");
    store = Store.open("jdbc:sqlite:" + data.resolve("it.db"));
    server =
        AgentSandboxServer.start(
            new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
            store,
            new RunWiring(
                List.of(backend),
                OperatorEgress.NONE,
                RunSettings.defaults("sessionit" + System.nanoTime()).withSpool(data),
                RunWiring.every(Duration.ofHours(1)),
                new RunContractServices.Config(
                    Optional.of(
                        RunContractServices.Artifacts.of(
                            new FolderArtifactStore(data.resolve("artifacts")),
                            data.resolve("artifact-spool"))),
                    Optional.empty(),
                    Map.of())));
    api = new ApiClient(server.baseUrl(), Duration.ofMinutes(5));
    admin = store.tokens().create("it-admin", Scopes.ALL, null).secret();
    ApiClient.Answer put =
        send(
            "PUT",
            BASE,
            "{\"enabled\": true, \"backend\": \""
                + backend.name()
                + "\", \"reason\": \"sessions\", \"agents\":"
                + " {\"coder\": {\"allow\": [], \"image\": \""
                + IMAGE
                + "\", \"ttl_seconds\": "
                + ttlSeconds
                + ","
                + " \"resources\": {\"cpus\": 1, \"memory_mb\": 512, \"pids\": 256}}}}");
    assertThat(put.status()).as(put.body()).isEqualTo(200);
  }

  @AfterAll
  static void stop() {
    if (server != null) {
      server.close();
    }
    if (store != null) {
      store.close();
    }
    if (leftovers != null) {
      for (String runId : runIds) {
        await().atMost(Duration.ofSeconds(120)).until(() -> leftovers.of(runId).isEmpty());
      }
    }
  }

  /** One admin-API exchange as the admin; {@code body} null sends none. */
  static ApiClient.Answer send(String method, String path, String body) {
    return api.send(method, path, admin, body);
  }

  /** {@code PUT files}: bytes of {@code type}, which ApiClient's JSON {@code put} does not send. */
  static ApiClient.Answer put(String id, String path, String type, byte[] body) {
    return api.send(
        api.builder(BASE + "/runs/" + id + "/files?path=" + path, admin)
            .header("Content-Type", type)
            .PUT(HttpRequest.BodyPublishers.ofByteArray(body)));
  }

  static JsonNode step(String id, String... command) throws Exception {
    ApiClient.Answer answer =
        send(
            "POST",
            BASE + "/runs/" + id + "/exec",
            JSON.writeValueAsString(
                Map.of("command", List.of(command), "cwd", "proj", "timeout_seconds", 900)));
    assertThat(answer.status()).as(answer.body()).isEqualTo(200);
    return answer.json();
  }

  static byte[] project() throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (TarArchiveOutputStream tar = new TarArchiveOutputStream(bytes)) {
      for (String[] file :
          List.of(
              new String[] {"calc.py", "def add(a, b):\n    return a - b\n"},
              new String[] {
                "test_calc.py",
                "import unittest\nfrom calc import add\n\nclass CalcTest(unittest.TestCase):\n"
                    + "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
                    + "if __name__ == '__main__':\n    unittest.main()\n"
              })) {
        byte[] content = file[1].getBytes(StandardCharsets.UTF_8);
        TarArchiveEntry entry = new TarArchiveEntry(file[0]);
        entry.setSize(content.length);
        tar.putArchiveEntry(entry);
        tar.write(content);
        tar.closeArchiveEntry();
      }
    }
    return bytes.toByteArray();
  }

  @Test
  void aSessionOfFiftyStepsBuildsAndTestsAProjectAndItsTimelineReconstructsEveryStep()
      throws Exception {
    ApiClient.Answer opened =
        send("POST", BASE + "/sessions", "{\"agent\": \"coder\", \"idle_seconds\": 600}");
    assertThat(opened.status()).as(opened.body()).isEqualTo(201);
    String id = opened.json().get("run_id").asText();
    runIds.add(id);
    assertThat(put(id, "proj", "application/x-tar", project()).status()).isEqualTo(200);

    List<List<String>> commands = new ArrayList<>();
    List<JsonNode> results = new ArrayList<>();
    java.util.function.Consumer<String[]> run =
        command -> {
          try {
            commands.add(List.of(command));
            results.add(step(id, command));
          } catch (Exception e) {
            throw new AssertionError(e);
          }
        };
    // -B: no bytecode cache. Python trusts a cached module while its source keeps the same size
    // and mtime second, and the fix below has the bug's size: a PUT within the same second as this
    // step (a quick runner on a quiet machine) would be tested as the stale bug.
    run.accept(new String[] {"python3", "-B", "-m", "unittest", "-q"});
    assertThat(results.get(0).get("exit_status").asInt()).as("the bug fails the test").isEqualTo(1);
    assertThat(
            put(
                    id,
                    "proj/calc.py",
                    "application/octet-stream",
                    "def add(a, b):\n    return a + b\n".getBytes(StandardCharsets.UTF_8))
                .status())
        .isEqualTo(200);
    run.accept(new String[] {"python3", "-B", "-m", "unittest", "-q"});
    assertThat(results.get(1).get("exit_status").asInt()).as("fixed").isZero();
    run.accept(
        new String[] {
          "sh", "-c", "curl -sS -m 10 -o /dev/null https://pypi.org/simple/ ; echo curl=$?"
        });
    for (int i = 4; i <= 49; i++) {
      run.accept(
          new String[] {"python3", "-c", "import calc; print(calc.add(" + i + ", " + i + "))"});
      assertThat(results.get(i - 1).get("stdout").asText()).isEqualTo((2 * i) + "\n");
    }
    run.accept(
        new String[] {
          "sh",
          "-c",
          "mkdir -p /workspace/out && python3 -m unittest -q 2> /workspace/out/tests.txt; cat /workspace/out/tests.txt"
        });
    assertThat(results).hasSize(50);
    assertThat(results.get(49).get("stderr").asText() + results.get(49).get("stdout").asText())
        .contains("OK");
    assertThat(results.get(2).get("egress_denied").asInt())
        .as("the refused index")
        .isGreaterThanOrEqualTo(1);

    ApiClient.Answer closed = send("DELETE", BASE + "/runs/" + id, null);
    assertThat(closed.status()).as(closed.body()).isEqualTo(200);
    assertThat(closed.json().get("status").asText()).isEqualTo("closed");

    JsonNode timeline = send("GET", BASE + "/runs/" + id + "/timeline", null).json();
    JsonNode steps = timeline.get("steps");
    assertThat(steps).hasSize(50);
    for (int n = 0; n < 50; n++) {
      JsonNode step = steps.get(n);
      assertThat(step.get("step").asInt()).isEqualTo(n + 1);
      List<String> command = new ArrayList<>();
      step.get("command").forEach(arg -> command.add(arg.asText()));
      assertThat(command).as("step %d", n + 1).isEqualTo(commands.get(n));
      assertThat(step.get("exit_status").asInt())
          .isEqualTo(results.get(n).get("exit_status").asInt());
      assertThat(step.get("end").asText()).isEqualTo("exit");
    }
    assertThat(steps.get(2).get("egress").get("denied"))
        .extracting(d -> d.get("host").asText())
        .contains("pypi.org");
    assertThat(timeline.get("files"))
        .extracting(f -> f.get("path").asText())
        .contains("/workspace/proj", "/workspace/proj/calc.py");
    JsonNode artifacts = timeline.get("end").get("artifacts").get("detail");
    assertThat(artifacts.get("collected").asBoolean()).as(artifacts.toString()).isTrue();
    assertThat(artifacts.get("files").toString()).contains("tests.txt");
    assertThat(timeline.get("chain").get("verified").asBoolean()).isTrue();
    await().atMost(Duration.ofSeconds(120)).until(() -> leftovers.of(id).isEmpty());
  }

  @Test
  void aLinkTheWorkloadPlantsIsNeverFollowedByAFileOperation() throws Exception {
    ApiClient.Answer opened = send("POST", BASE + "/sessions", "{\"agent\": \"coder\"}");
    assertThat(opened.status()).as(opened.body()).isEqualTo(201);
    String id = opened.json().get("run_id").asText();
    runIds.add(id);
    assertThat(
            send(
                    "POST",
                    BASE + "/runs/" + id + "/exec",
                    "{\"command\": [\"ln\", \"-s\", \"/etc\", \"/workspace/up\"]}")
                .status())
        .isEqualTo(200);

    ApiClient.Answer through =
        put(
            id,
            "up/passwd",
            "application/octet-stream",
            "owned\n".getBytes(StandardCharsets.UTF_8));
    assertThat(through.status()).as(through.body()).isEqualTo(400);
    assertThat(through.json().get("reason").asText()).isEqualTo("symlink");
    JsonNode passwd =
        send("POST", BASE + "/runs/" + id + "/exec", "{\"command\": [\"cat\", \"/etc/passwd\"]}")
            .json();
    assertThat(passwd.get("stdout").asText()).doesNotContain("owned");
    assertThat(send("DELETE", BASE + "/runs/" + id, null).status()).isEqualTo(200);
  }
}
