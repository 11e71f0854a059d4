package dev.agentsandbox.server.run;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.dockerjava.api.DockerClient;
import com.sun.net.httpserver.HttpExchange;
import dev.agentsandbox.artifacts.FolderArtifactStore;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.SandboxBackend;
import dev.agentsandbox.backend.docker.DockerBackend;
import dev.agentsandbox.backend.docker.DockerBackendConfig;
import dev.agentsandbox.backend.docker.DockerClients;
import dev.agentsandbox.backend.microvm.MicroVmBackend;
import dev.agentsandbox.backend.microvm.MicroVmConfig;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.runs.OperatorEgress;
import dev.agentsandbox.runs.RunContractServices;
import dev.agentsandbox.runs.RunSettings;
import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.server.CapturedLogs;
import dev.agentsandbox.server.RunWiring;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.testing.LinkServer;
import dev.agentsandbox.testing.api.ApiClient;
import dev.agentsandbox.testing.api.ContractCheckedHttpClient;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The run contract end to end on Docker, under runc and under runsc, and on the microVM backend: a
 * job reads the run-token credential the control plane minted for it, calls an allowed test service
 * that accepts only that credential (it asks the control plane whether the bearer may read this
 * run, as an internal API would introspect a token), and writes {@code out/result.json}; afterwards
 * the artifact downloads with the hash the listing gives, the same credential is refused
 * everywhere, and its value is nowhere: not in the output tail (the job prints it on purpose), the
 * audit rows, the timeline, the control plane's log lines or any file under its data directory.
 */
class RunContractIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String BASE = "/api/admin/platform/agent-sandbox";
  private static final String IMAGE = "agent-sandbox/workload:dev";

  /** Contract-checked, for the one exchange whose body is read as bytes (the artifact). */
  private static final HttpClient HTTP = ContractCheckedHttpClient.create();

  /** For the test service, which is not the API. */
  private static final HttpClient PLAIN =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

  private static DockerClient docker;

  /** An upstream address only this host carries (benchmarking range), declared internal. */
  private static final String UPSTREAM_ADDRESS = "198.18.79.1";

  private static LinkServer upstream;

  /** The control plane the check service introspects tokens against, per test. */
  private static volatile AgentSandboxServer current;

  /** The check service's client to {@link #current}, with its 10-second request timeout. */
  private static volatile ApiClient introspection;

  /** Every bearer the check service accepted: the run's credential, seen on the wire. */
  private static final Set<String> accepted = ConcurrentHashMap.newKeySet();

  @BeforeAll
  static void start() throws Exception {
    docker = DockerClients.fromEnvironment();
    Probe probe = new DockerBackend(docker, DockerBackendConfig.defaults()).probe();
    if (!probe.available()) {
      fail("RunContractIT needs a Docker daemon: " + probe.detail());
    }
    for (String image : List.of(IMAGE, DockerBackendConfig.DEFAULT_PROXY_IMAGE)) {
      try {
        docker.inspectImageCmd(image).exec();
      } catch (RuntimeException e) {
        fail("RunContractIT needs image " + image + " (run images/build.sh)");
      }
    }
    upstream = LinkServer.onLink("asb-runs0", UPSTREAM_ADDRESS, "hello from upstream");
    upstream.handle("/check", RunContractIT::check);
  }

  @AfterAll
  static void stop() throws Exception {
    if (upstream != null) {
      upstream.close();
    }
  }

  /** runc always; runsc too when the daemon has gVisor registered (CI's has). */
  static Stream<String> runtimes() {
    Probe probe = new DockerBackend(docker(), DockerBackendConfig.defaults()).probe();
    return probe.available() && probe.isolation() == Isolation.GVISOR
        ? Stream.of("runc", "runsc")
        : Stream.of("runc");
  }

  private static DockerClient docker() {
    return docker != null ? docker : DockerClients.fromEnvironment();
  }

  @ParameterizedTest(name = "under {0}")
  @MethodSource("runtimes")
  void aJobUsesItsCredentialLeavesAResultAndTheCredentialDiesWithTheRun(
      String runtime, @TempDir Path dataDir) throws Exception {
    DockerBackendConfig config =
        runtime.equals("runc")
            ? DockerBackendConfig.builder().gvisorRuntime("no-such-runtime").build()
            : DockerBackendConfig.defaults();
    contract(
        dataDir,
        new DockerBackend(docker, config),
        runtime,
        Duration.ofSeconds(120),
        RunContractIT::leftOf);
  }

  /**
   * The same on the microVM backend (QEMU under TCG here, or what {@code
   * AGENT_SANDBOX_MICROVM_ACCEL} names): the credential is a file the guest's init placed, the
   * result is read off the VM's output disk. Fails, never skips, on a host that cannot run it.
   */
  @org.junit.jupiter.api.Test
  void onTheMicroVmBackendToo(@TempDir Path dataDir) throws Exception {
    Path proxyJar = Path.of("..", "proxy", "target", "agent-sandbox-proxy.jar");
    if (!Files.isReadable(proxyJar)) {
      fail("The microVM case needs the proxy's jar " + proxyJar + " (./mvnw -pl proxy package)");
    }
    String java = ProcessHandle.current().info().command().orElse("java");
    MicroVmConfig config =
        MicroVmConfig.defaults(
                List.of(
                    java,
                    "-Xmx64m",
                    "-XX:+UseSerialGC",
                    "-XX:TieredStopAtLevel=1",
                    "-jar",
                    proxyJar.toAbsolutePath().normalize().toString()))
            .toBuilder()
            .accel(System.getenv().getOrDefault("AGENT_SANDBOX_MICROVM_ACCEL", "tcg"))
            .build();
    MicroVmBackend backend = new MicroVmBackend(config);
    Probe probe = backend.probe();
    if (!probe.available()) {
      fail("The microVM case needs QEMU, a guest kernel, nftables and taps: " + probe.detail());
    }
    // Under software emulation a boot alone can take a minute on a busy host.
    contract(
        dataDir,
        backend,
        probe.runtime(),
        Duration.ofSeconds(300),
        runId -> microVmLeftOf(config, runId));
  }

  private static void contract(
      Path dataDir,
      SandboxBackend backend,
      String runtime,
      Duration runWithin,
      Function<String, List<String>> leftovers)
      throws Exception {
    CapturedLogs logs = CapturedLogs.attach();
    try (Store store = Store.open("jdbc:sqlite:" + dataDir.resolve("it.db"));
        AgentSandboxServer server =
            AgentSandboxServer.start(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                store,
                new RunWiring(
                    List.of(backend),
                    new OperatorEgress(Map.of("upstream.test", List.of(UPSTREAM_ADDRESS))),
                    RunSettings.defaults("contractit" + System.nanoTime()),
                    RunWiring.every(Duration.ofHours(1)),
                    new RunContractServices.Config(
                        Optional.of(
                            RunContractServices.Artifacts.of(
                                new FolderArtifactStore(dataDir.resolve("artifacts")),
                                dataDir.resolve("spool"))),
                        Optional.empty(),
                        Map.of())))) {
      introspection = new ApiClient(server.baseUrl(), Duration.ofSeconds(10));
      current = server;
      accepted.clear();
      String admin = store.tokens().create("it-admin", Scopes.ALL, null).secret();
      // These requests had no timeout; ten minutes outlasts every wait of the test.
      ApiClient api = new ApiClient(server.baseUrl(), Duration.ofMinutes(10));
      expect(
          200,
          api.put(
              BASE,
              admin,
              """
          {"enabled": true, "backend": "%s", "reason": "RunContractIT",
           "agents": {"worker": {"allow": ["upstream.test:%d"], "image": "%s", "ttl_seconds": %d,
             "credentials": {"self": {"source": "run-token"}},
             "internal": {"upstream": {"cidr": "%s/32", "ports": [%d]}}}}}
          """
                  .formatted(
                      backend.name(),
                      upstream.port(),
                      IMAGE,
                      runWithin.toSeconds(),
                      UPSTREAM_ADDRESS,
                      upstream.port()),
              "If-Match",
              "\"0\""));

      String check = "http://upstream.test:" + upstream.port() + "/check?run=$AGENT_SANDBOX_RUN_ID";
      String script =
          "T=$(cat \"$AGENT_SANDBOX_CREDENTIALS/self\"); "
              + "echo \"leaking on purpose: $T\"; "
              + "ok=$(curl -s -m 20 -o /dev/null -w '%{http_code}' -H \"Authorization: Bearer $T\" \""
              + check
              + "\"); "
              + "forged=$(curl -s -m 20 -o /dev/null -w '%{http_code}' "
              + "-H \"Authorization: Bearer asb_forged$RANDOM\" \""
              + check
              + "\"); "
              + "printf '{\"run\":\"%s\",\"with_credential\":%s,\"forged\":%s}' "
              + "\"$AGENT_SANDBOX_RUN_ID\" \"$ok\" \"$forged\" > \"$AGENT_SANDBOX_OUT/result.json\"; "
              + "echo finished";
      JsonNode started =
          expect(
              202,
              api.post(
                  BASE + "/runs",
                  admin,
                  JSON.writeValueAsString(
                      Map.of(
                          "agent",
                          "worker",
                          "command",
                          List.of("sh", "-c", script),
                          "labels",
                          Map.of("owner", "it", "task-ref", "T-9")))));
      String runId = started.get("run_id").asText();

      JsonNode run =
          await()
              .atMost(runWithin.plusSeconds(30))
              .pollInterval(Duration.ofMillis(200))
              .until(
                  () -> expect(200, api.get(BASE + "/runs/" + runId, admin)),
                  r -> r.hasNonNull("ended_at"));
      assertThat(run.get("status").asText()).as(run.toString()).isEqualTo("exited");
      assertThat(run.get("exit_status").asInt()).as(run.toString()).isZero();
      assertThat(run.get("runtime").asText()).isEqualTo(runtime);
      assertThat(accepted).as("the check service saw the run's credential").hasSize(1);
      String credential = accepted.iterator().next();

      // the result the job left, downloadable with the hash the listing gives
      JsonNode listing = expect(200, api.get(BASE + "/runs/" + runId + "/artifacts", admin));
      assertThat(listing.get("artifacts")).as(listing.toString()).hasSize(1);
      JsonNode entry = listing.get("artifacts").get(0);
      assertThat(entry.get("path").asText()).isEqualTo("result.json");
      // Read as bytes, which ApiClient's string answers are not, to hash exactly what was stored.
      HttpResponse<byte[]> file =
          HTTP.send(
              api.builder(entry.get("href").asText(), admin).GET().build(),
              HttpResponse.BodyHandlers.ofByteArray());
      assertThat(file.statusCode()).isEqualTo(200);
      String sha =
          HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(file.body()));
      assertThat(sha).isEqualTo(entry.get("sha256").asText());
      JsonNode result = JSON.readTree(file.body());
      assertThat(result.get("run").asText()).isEqualTo(runId);
      assertThat(result.get("with_credential").asInt())
          .as("the service accepted the run's credential during the run")
          .isEqualTo(200);
      assertThat(result.get("forged").asInt())
          .as("the service refused any other bearer")
          .isEqualTo(401);

      // dead with the run: the control plane and the service refuse it now
      assertThat(api.get(BASE + "/runs/" + runId, credential).status()).isEqualTo(401);
      HttpResponse<String> late =
          PLAIN.send(
              HttpRequest.newBuilder(
                      URI.create(
                          "http://"
                              + UPSTREAM_ADDRESS
                              + ":"
                              + upstream.port()
                              + "/check?run="
                              + runId))
                  .header("Authorization", "Bearer " + credential)
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(late.statusCode()).isEqualTo(401);

      // nowhere to be read: output, audit, timeline, logs, data directory
      assertThat(run.get("output_tail").asText())
          .contains("leaking on purpose")
          .contains("finished")
          .doesNotContain(credential);
      // The sandbox is removed after the result is answered; its teardown row follows.
      JsonNode audit =
          await()
              .atMost(Duration.ofSeconds(60))
              .pollInterval(Duration.ofMillis(250))
              .until(
                  () ->
                      expect(
                          200,
                          api.get("/api/admin/platform/audit?run=" + runId + "&limit=500", admin)),
                  rows -> rows.toString().contains("agent_sandbox.teardown"));
      List<String> types = new ArrayList<>();
      audit.get("rows").forEach(r -> types.add(r.get("type").asText()));
      assertThat(types)
          .contains(
              "agent_sandbox.launch",
              "agent_sandbox.credentials.issue",
              "agent_sandbox.started",
              "agent_sandbox.egress.allow",
              "agent_sandbox.artifacts",
              "agent_sandbox.teardown");
      assertThat(audit.toString()).contains("\"self\"").doesNotContain(credential);
      JsonNode timeline = expect(200, api.get(BASE + "/runs/" + runId + "/timeline", admin));
      assertThat(timeline.get("labels").get("task-ref").asText()).isEqualTo("T-9");
      assertThat(timeline.get("what_ran").get("image_id").asText())
          .as("the content id of the image that ran")
          .isEqualTo(docker.inspectImageCmd(IMAGE).exec().getId());
      assertThat(timeline.get("what_ran").get("runtime").asText()).isEqualTo(runtime);
      assertThat(timeline.get("chain").get("verified").asBoolean()).isTrue();
      assertThat(timeline.toString()).doesNotContain(credential);
      assertThat(logs.lines()).isNotEmpty().noneMatch(line -> line.contains(credential));
      byte[] needle = credential.getBytes(StandardCharsets.UTF_8);
      try (Stream<Path> files = Files.walk(dataDir)) {
        for (Path f : files.filter(Files::isRegularFile).toList()) {
          assertThat(indexOf(Files.readAllBytes(f), needle))
              .as("the credential's bytes in " + f)
              .isEqualTo(-1);
        }
      }
      await()
          .atMost(Duration.ofSeconds(30))
          .pollInterval(Duration.ofMillis(200))
          .untilAsserted(
              () -> assertThat(leftovers.apply(runId)).as("objects of the run").isEmpty());
    } finally {
      current = null;
      introspection = null;
      logs.detach();
    }
  }

  /**
   * The allowed service: it accepts a bearer only if the control plane lets that bearer read the
   * run named in the query, which only that run's credential may, and only while the run lives.
   */
  private static void check(HttpExchange exchange) throws IOException {
    try (exchange) {
      AgentSandboxServer server = current;
      ApiClient client = introspection;
      String query = Optional.ofNullable(exchange.getRequestURI().getQuery()).orElse("");
      String auth =
          Optional.ofNullable(exchange.getRequestHeaders().getFirst("Authorization")).orElse("");
      int status = 401;
      if (server != null
          && client != null
          && query.matches("run=[a-z0-9]{1,32}")
          && auth.startsWith("Bearer ")) {
        try {
          // exchange, not get: a transport failure stays an IOException, as before.
          if (client
                  .exchange(
                      client
                          .builder(
                              BASE + "/runs/" + query.substring(4),
                              auth.substring("Bearer ".length()))
                          .GET())
                  .status()
              == 200) {
            status = 200;
            accepted.add(auth.substring("Bearer ".length()));
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      exchange.sendResponseHeaders(status, -1);
    }
  }

  private static List<String> leftOf(String runId) {
    List<String> found = new ArrayList<>();
    String label = Labels.RUN_ID + "=" + runId;
    docker
        .listContainersCmd()
        .withShowAll(true)
        .withLabelFilter(List.of(label))
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

  /** The microVM objects of a run: its directory, its tap, its fence elements, its processes. */
  private static List<String> microVmLeftOf(MicroVmConfig config, String runId) {
    List<String> found = new ArrayList<>();
    Path dir = config.runDir().resolve(runId);
    if (Files.exists(dir)) {
      found.add("run directory " + dir);
    }
    try (Stream<Path> links = Files.list(Path.of("/sys/class/net"))) {
      for (Path link : links.toList()) {
        Path alias = link.resolve("ifalias");
        if (Files.isReadable(alias) && Files.readString(alias).contains("run=" + runId)) {
          found.add("tap " + link.getFileName());
        }
      }
      Process nft = new ProcessBuilder("nft", "list", "table", "inet", "agent_sandbox").start();
      String table = new String(nft.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      nft.waitFor();
      if (table.contains("run " + runId)) {
        found.add("nftables elements of run " + runId);
      }
    } catch (IOException e) {
      found.add("could not look: " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      found.add("interrupted");
    }
    ProcessHandle.allProcesses()
        .filter(
            p -> p.info().arguments().map(a -> String.join(" ", a)).orElse("").contains(dir + "/"))
        .forEach(p -> found.add("process " + p.pid()));
    return found;
  }

  private static int indexOf(byte[] haystack, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= haystack.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (haystack[i + j] != needle[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }

  /** The answer's body as JSON, after asserting its status (the message shows the body). */
  private static JsonNode expect(int status, ApiClient.Answer answer) {
    assertThat(answer.status())
        .as(
            answer.raw().request().method()
                + " "
                + answer.raw().uri().getRawPath()
                + ": "
                + answer.body())
        .isEqualTo(status);
    return answer.json();
  }
}
