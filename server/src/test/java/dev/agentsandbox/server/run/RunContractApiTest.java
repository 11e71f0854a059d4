package dev.agentsandbox.server.run;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.artifacts.FolderArtifactStore;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.Manifest;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.ReapReport;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxBackend;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.SandboxPlan;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.runs.OperatorEgress;
import dev.agentsandbox.runs.RunContractServices;
import dev.agentsandbox.runs.RunSettings;
import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.server.RunWiring;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.testing.api.ApiClient;
import dev.agentsandbox.testing.api.ContractCheckedHttpClient;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The run contract through the real API: labels in, a run token that reads only its own run and
 * dies with it, artifacts listed and downloaded with their hash, and the timeline. The backend is a
 * small real implementation of the SPI that runs nothing and waits for the test to let it end.
 */
class RunContractApiTest {
  private static final String BASE = "/api/admin/platform/agent-sandbox";
  private static final byte[] RESULT = "{\"passed\": 12}".getBytes(StandardCharsets.UTF_8);
  private final HttpClient http = ContractCheckedHttpClient.create();
  private final HeldBackend backend = new HeldBackend();
  private Store store;
  private AgentSandboxServer server;
  private ApiClient api;
  private String admin;

  @BeforeEach
  void start(@TempDir Path dir) {
    store = Store.open("jdbc:sqlite:" + dir.resolve("contract.db"));
    RunContractServices.Config contract =
        new RunContractServices.Config(
            Optional.of(
                RunContractServices.Artifacts.of(
                    new FolderArtifactStore(dir.resolve("artifacts")), dir.resolve("spool"))),
            Optional.empty(),
            Map.of());
    server =
        AgentSandboxServer.start(
            new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
            store,
            new RunWiring(
                List.of(backend),
                OperatorEgress.NONE,
                RunSettings.defaults("contract-test"),
                RunWiring.every(Duration.ofHours(1)),
                contract));
    api = new ApiClient(server.baseUrl());
    admin = store.tokens().create("admin", Scopes.ALL, null).secret();
  }

  @AfterEach
  void stop() {
    backend.release.countDown();
    server.close();
    store.close();
  }

  @Test
  void aRunsTokenReadsOnlyItsRunAndDiesWithItAndItsOutputsAndTimelineAreThere() throws Exception {
    ApiClient.Answer put =
        api.put(
            BASE,
            admin,
            "{\"enabled\": true, \"agents\": {\"helper\": {\"allow\": [\"api.vendor.com\"],"
                + " \"credentials\": {\"self\": {\"source\": \"run-token\"}}}},"
                + " \"reason\": \"CHG-9\"}");
    assertThat(put.status()).as(put.body()).isEqualTo(200);

    ApiClient.Answer started =
        api.post(
            BASE + "/runs",
            admin,
            "{\"agent\": \"helper\", \"command\": [\"make\", \"test\"],"
                + " \"labels\": {\"owner\": \"alice\", \"task-ref\": \"T-42\"}}");
    assertThat(started.status()).as(started.body()).isEqualTo(202);
    String runId = started.json().get("run_id").asText();
    assertThat(backend.launched.await(30, TimeUnit.SECONDS)).isTrue();
    String token = backend.specs.get(runId).credentials().get(0).value();

    // the run's own token: its run yes, anything else no
    assertThat(api.get(BASE + "/runs/" + runId, token).status()).isEqualTo(200);
    assertThat(api.get(BASE + "/runs", token).status()).isEqualTo(403);
    assertThat(api.get(BASE, token).status()).isEqualTo(403);
    assertThat(api.get(BASE + "/runs/" + runId + "/timeline", token).status()).isEqualTo(403);
    assertThat(api.get(BASE + "/runs/zzzz1111", token).status()).isEqualTo(403);

    backend.release.countDown();
    JsonNode ended = awaitEnd(runId);
    assertThat(ended.get("status").asText()).isEqualTo("exited");
    // dead with the run
    assertThat(api.get(BASE + "/runs/" + runId, token).status()).isEqualTo(401);

    // the output: one stream as text, or each line tagged with its stream
    assertThat(api.get(BASE + "/runs/" + runId + "/output", admin).body())
        .isEqualTo("built\nwarning: flaky\n");
    ApiClient.Answer tagged =
        api.send(
            api.builder(BASE + "/runs/" + runId + "/output", admin)
                .header("Accept", "application/x-ndjson")
                .GET());
    assertThat(tagged.header("Content-Type")).isEqualTo("application/x-ndjson");
    assertThat(tagged.body())
        .isEqualTo("{\"stdout\":\"built\\n\"}\n{\"stderr\":\"warning: flaky\\n\"}\n");

    JsonNode artifacts = api.get(BASE + "/runs/" + runId + "/artifacts", admin).json();
    assertThat(artifacts.get("artifacts")).hasSize(1);
    JsonNode result = artifacts.get("artifacts").get(0);
    assertThat(result.get("path").asText()).isEqualTo("result.json");
    String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(RESULT));
    assertThat(result.get("sha256").asText()).isEqualTo(sha);
    // Kept on the checked HttpClient: the download is compared byte for byte, and ApiClient reads
    // every body as a string.
    HttpResponse<byte[]> file =
        http.send(
            api.builder(result.get("href").asText(), admin).GET().build(),
            HttpResponse.BodyHandlers.ofByteArray());
    assertThat(file.statusCode()).isEqualTo(200);
    assertThat(file.body()).isEqualTo(RESULT);
    assertThat(file.headers().firstValue("X-Agent-Sandbox-Sha256")).contains(sha);
    assertThat(
            api.get(BASE + "/runs/" + runId + "/artifacts/file?path=..%2Fsecret", admin).status())
        .isEqualTo(400);

    JsonNode timeline = api.get(BASE + "/runs/" + runId + "/timeline", admin).json();
    assertThat(timeline.get("labels").get("owner").asText()).isEqualTo("alice");
    assertThat(timeline.get("launched_by").get("token").asText()).isEqualTo("admin");
    assertThat(timeline.get("what_ran").get("command").toString()).contains("make");
    assertThat(timeline.get("what_ran").get("proxy_pool").asText()).isEqualTo(STANDBY);
    assertThat(timeline.get("what_ran").get("credentials").get(0).get("name").asText())
        .isEqualTo("self");
    assertThat(timeline.get("end").get("artifacts").get("detail").get("files")).hasSize(1);
    assertThat(timeline.get("end").get("teardown")).isNotNull();
    assertThat(timeline.get("chain").get("verified").asBoolean()).isTrue();
    assertThat(timeline.toString()).doesNotContain(token);

    JsonNode byLabel = api.get("/api/admin/platform/audit?label=task-ref=T-42", admin).json();
    assertThat(byLabel.get("rows")).isNotEmpty();
    byLabel.get("rows").forEach(r -> assertThat(r.get("run_id").asText()).isEqualTo(runId));
    assertThat(api.get("/api/admin/platform/audit?label=bad%20key=x", admin).status())
        .isEqualTo(400);
  }

  private JsonNode awaitEnd(String runId) {
    return await("run " + runId + " to end")
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(50))
        .until(
            () -> api.get(BASE + "/runs/" + runId, admin).json(),
            run -> run.has("ended_at") && !run.get("ended_at").isNull());
  }

  /** Launches at once, holds the workload until the test releases it, leaves one output file. */
  /** The proxy-pool standby the held backend says each run was built on. */
  private static final String STANDBY = "sb-abcdefghijklmnop";

  private static final class HeldBackend implements SandboxBackend {
    final CountDownLatch launched = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);
    final Map<String, RunSpec> specs = new ConcurrentHashMap<>();

    @Override
    public String name() {
      return "docker";
    }

    @Override
    public boolean deliversCredentials() {
      return true;
    }

    @Override
    public Probe probe() {
      return new Probe("docker", true, Isolation.CONTAINER, "runc", "held by the test");
    }

    @Override
    public SandboxPlan plan(RunSpec spec) {
      return new SandboxPlan(
          "docker",
          "runc",
          Isolation.CONTAINER,
          List.of(new Manifest("held", spec.runId(), Map.of())));
    }

    @Override
    public Sandbox launch(RunSpec spec, SandboxListener listener) {
      specs.put(spec.runId(), spec);
      listener.onOutput("built\n".getBytes(StandardCharsets.UTF_8));
      listener.onErrorOutput("warning: flaky\n".getBytes(StandardCharsets.UTF_8));
      launched.countDown();
      return new Sandbox() {
        @Override
        public String runId() {
          return spec.runId();
        }

        @Override
        public String runtime() {
          return "runc";
        }

        @Override
        public Optional<String> pooledProxy() {
          return Optional.of(STANDBY);
        }

        @Override
        public Completion await(Instant deadline) throws InterruptedException {
          release.await(30, TimeUnit.SECONDS);
          return new Completion(Completion.End.EXIT, OptionalInt.of(0), "exited");
        }

        @Override
        public Optional<InputStream> outputs() {
          try {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try (TarArchiveOutputStream tar = new TarArchiveOutputStream(bytes)) {
              TarArchiveEntry e = new TarArchiveEntry("out/result.json");
              e.setSize(RESULT.length);
              tar.putArchiveEntry(e);
              tar.write(RESULT);
              tar.closeArchiveEntry();
            }
            return Optional.of(new ByteArrayInputStream(bytes.toByteArray()));
          } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
          }
        }

        @Override
        public void kill() {
          release.countDown();
        }

        @Override
        public void teardown() {
          release.countDown();
        }
      };
    }

    @Override
    public ReapReport reap(Instant now, Predicate<String> isLive) {
      return new ReapReport(List.of(), List.of());
    }
  }
}
