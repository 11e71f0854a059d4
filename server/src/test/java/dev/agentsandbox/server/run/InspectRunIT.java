package dev.agentsandbox.server.run;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.microvm.MicroVmBackend;
import dev.agentsandbox.backend.microvm.MicroVmConfig;
import dev.agentsandbox.credentials.CommandIssuer;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.runs.OperatorEgress;
import dev.agentsandbox.runs.RunContractServices;
import dev.agentsandbox.runs.RunSettings;
import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.server.CapturedLogs;
import dev.agentsandbox.server.RunWiring;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.testing.GitHubStandIn;
import dev.agentsandbox.testing.api.ApiClient;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The run, end to end through the API on the microVM backend: an agent may {@code GET} one
 * repository path of a loopback "GitHub" with a token the proxy injects (a {@code command}
 * credential, as a GitHub App's would be minted). It reads it, is refused a {@code POST} and
 * another path, never sees the token in its environment, files or output — nor is it in the audit,
 * the timeline or the control plane's logs — and the timeline shows each request.
 */
class InspectRunIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String BASE = "/api/admin/platform/agent-sandbox";
  private static GitHubStandIn github;

  @BeforeAll
  static void standUp() throws Exception {
    github = GitHubStandIn.start(GitHubStandIn.SERVER);
  }

  @AfterAll
  static void tearDown() throws Exception {
    if (github != null) {
      github.close();
    }
  }

  @Test
  void theTimelineShowsEachRequestAndTheTokenIsNowhereTheAgentLooks(@TempDir Path dataDir)
      throws Exception {
    Path proxyJar = Path.of("..", "proxy", "target", "agent-sandbox-proxy.jar");
    if (!Files.isReadable(proxyJar)) {
      fail("InspectRunIT needs the proxy's jar " + proxyJar + " (./mvnw -pl proxy package)");
    }
    String javaBin = ProcessHandle.current().info().command().orElse("java");
    MicroVmConfig config =
        MicroVmConfig.defaults(
                List.of(
                    javaBin,
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
      fail("InspectRunIT needs QEMU, a guest kernel, nftables and taps: " + probe.detail());
    }
    // The operator's credential command: what a GitHub App's token minting would be.
    Path mint = dataDir.resolve("mint-github");
    Files.writeString(
        mint,
        "#!/bin/sh\nprintf '{\"value\":\"%s\",\"expires_at\":\"%s\"}' '"
            + github.token
            + "' \"$AGENT_SANDBOX_DEADLINE\"\n");
    Files.setPosixFilePermissions(mint, PosixFilePermissions.fromString("rwx------"));
    CapturedLogs logs = CapturedLogs.attach();
    String address = github.layout.address();
    try (Store store = Store.open("jdbc:sqlite:" + dataDir.resolve("it.db"));
        AgentSandboxServer server =
            AgentSandboxServer.start(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                store,
                new RunWiring(
                    List.of(backend),
                    new OperatorEgress(
                        Map.of(GitHubStandIn.HOST, List.of(address)),
                        Optional.of(github.authority.pem())),
                    RunSettings.defaults("inspectit" + System.nanoTime()),
                    RunWiring.every(Duration.ofHours(1)),
                    new RunContractServices.Config(
                        Optional.empty(),
                        Optional.empty(),
                        Map.of(
                            "mint-github",
                            new CommandIssuer(
                                List.of(mint.toString()),
                                Duration.ofSeconds(20),
                                Clock.systemUTC())))))) {
      String admin = store.tokens().create("it-admin", Scopes.ALL, null).secret();
      // These requests had no timeout; ten minutes outlasts every wait of the test.
      ApiClient api = new ApiClient(server.baseUrl(), Duration.ofMinutes(10));
      expect(
          200,
          api.put(
              BASE,
              admin,
              """
          {"enabled": true, "backend": "%s", "reason": "InspectRunIT",
           "agents": {"reviewer": {"allow": ["%s"], "image": "agent-sandbox/workload:dev",
             "ttl_seconds": 300,
             "credentials": {"github": {"source": "command", "command": "mint-github",
                                        "env": "GITHUB_TOKEN"}},
             "internal": {"github": {"cidr": "%s/32", "ports": [%d]}},
             "inspect": {"%s": {"rules": ["GET %s"], "credential": "github"}}}}}
          """
                  .formatted(
                      backend.name(),
                      github.authority(),
                      address,
                      github.port(),
                      GitHubStandIn.HOST,
                      GitHubStandIn.REPOSITORY)));
      String url = "https://" + github.authority();
      String script =
          "echo \"get=$(curl -sS -o /tmp/get -w '%{http_code}' -H \"Authorization: Bearer $GITHUB_TOKEN\" "
              + url
              + GitHubStandIn.REPOSITORY
              + ")\"; cat /tmp/get; "
              + "echo \"post=$(curl -sS -o /dev/null -w '%{http_code}' -X POST -d x "
              + url
              + GitHubStandIn.REPOSITORY
              + ")\"; "
              + "echo \"other=$(curl -sS -o /dev/null -w '%{http_code}' "
              + url
              + "/repos/acme/gadgets)\"; "
              + "echo \"file=$(cat $AGENT_SANDBOX_CREDENTIALS/github)\"; env; "
              + "grep -rsl ghs_ /run /workspace /tmp 2>/dev/null; echo searched";
      JsonNode started =
          expect(
              202,
              api.post(
                  BASE + "/runs",
                  admin,
                  JSON.writeValueAsString(
                      Map.of("agent", "reviewer", "command", List.of("sh", "-c", script)))));
      String runId = started.get("run_id").asText();
      JsonNode run =
          await()
              .atMost(Duration.ofMinutes(6))
              .pollInterval(Duration.ofMillis(500))
              .until(
                  () -> expect(200, api.get(BASE + "/runs/" + runId, admin)),
                  r -> r.hasNonNull("ended_at"));
      String tail = run.get("output_tail").asText();
      assertThat(run.get("status").asText()).as(run.toString()).isEqualTo("exited");
      assertThat(tail)
          .contains("get=200")
          .contains(github.body().strip())
          .contains("post=403")
          .contains("other=403")
          .contains("file=proxy-managed")
          // The variable holds the placeholder (MicroVmInspectIT reads it); the tail shows it
          // redacted, as every credential variable's value.
          .contains("GITHUB_TOKEN=")
          .contains("searched");
      assertThat(github.seen())
          .containsExactly(
              new GitHubStandIn.Seen("GET", GitHubStandIn.REPOSITORY, "Bearer " + github.token));

      JsonNode timeline = expect(200, api.get(BASE + "/runs/" + runId + "/timeline", admin));
      List<String> egress = new ArrayList<>();
      Stream.concat(
              StreamSupport.stream(timeline.get("egress").get("allowed").spliterator(), false),
              StreamSupport.stream(timeline.get("egress").get("denied").spliterator(), false))
          .forEach(
              d ->
                  egress.add(
                      d.path("method").asText()
                          + " "
                          + d.path("path").asText()
                          + " "
                          + d.path("reason").asText()
                          + " "
                          + d.path("status").asText("-")
                          + " "
                          + d.path("credential").asText("-")));
      assertThat(egress)
          .as("the timeline's egress")
          .contains(
              "GET " + GitHubStandIn.REPOSITORY + " allowed 200 github",
              "POST " + GitHubStandIn.REPOSITORY + " method-not-allowed - -",
              "GET /repos/acme/gadgets path-not-allowed - -");

      ApiClient.Answer audit = api.get("/api/admin/platform/audit/export?run=" + runId, admin);
      for (String text :
          Stream.of(tail, timeline.toString(), audit.body(), String.join("\n", logs.lines()))
              .toList()) {
        assertThat(text).as("the token in what the run shows").doesNotContain(github.token);
      }
    } finally {
      logs.detach();
    }
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
