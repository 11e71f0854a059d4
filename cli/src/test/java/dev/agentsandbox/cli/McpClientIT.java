package dev.agentsandbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.testing.api.ApiClient;
import dev.agentsandbox.testing.api.CheckingRelay;
import java.io.IOException;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The MCP server as a client nobody here wrote drives it: the official TypeScript SDK's {@code
 * Client} ({@code @modelcontextprotocol/sdk} from npm, {@code src/test/mcp-client}) over stdio
 * ({@code agent-sandbox mcp}, the packaged jar) and over streamable HTTP (serve's {@code /mcp}),
 * against a real serve with the Docker backend, with two tokens limited to one agent each. The node
 * test skips its session cases, saying why, while the server's OpenAPI document has no sessions
 * path.
 */
class McpClientIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Path CLIENT_SOURCE = Path.of("src", "test", "mcp-client");
  private static final Path CLIENT = Path.of("target", "mcp-client");

  private static Process serve;
  private static Path data;
  private static String base;

  /** The test's own requests to the admin API, each checked against openapi.json. */
  private static ApiClient api;

  private static String admin;

  @BeforeAll
  static void start() throws Exception {
    assertThat(CliProcess.JAR).as("the packaged CLI jar (failsafe runs after package)").exists();
    data = Files.createTempDirectory("asb-mcp-it");
    String db = "jdbc:sqlite:" + data.resolve("store.db");
    serve =
        new ProcessBuilder(
                java(),
                "-jar",
                CliProcess.JAR.toString(),
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--db",
                db,
                "--data-dir",
                data.toString(),
                "--instance-id",
                "mcp-it-" + ProcessHandle.current().pid())
            .redirectErrorStream(true)
            .start();
    base = CliProcess.awaitListening(serve);
    api = new ApiClient(base, Duration.ofSeconds(60));
    admin = Files.readString(data.resolve("admin-token"), StandardCharsets.UTF_8).strip();
    Files.writeString(
        data.resolve("token-a"),
        createToken(db, "mcp-a", "agent_sandbox.read,agent_sandbox.run", "--agents", "mcpa"));
    Files.writeString(
        data.resolve("token-b"),
        createToken(db, "mcp-b", "agent_sandbox.read,agent_sandbox.run", "--agents", "mcpb"));
    String agent =
        "{\"allow\": [%s], \"image\": \"agent-sandbox/workload:dev\", \"ttl_seconds\": 300,"
            + " \"resources\": {\"cpus\": 1, \"memory_mb\": 256, \"pids\": 128}}";
    ApiClient.Answer put =
        send(
            "PUT",
            "/api/admin/platform/agent-sandbox",
            admin,
            "{\"enabled\": true, \"backend\": \"docker\", \"reason\": \"McpClientIT setup\","
                + " \"agents\": {\"mcpa\": "
                + agent.formatted("\"allowed.test\", \"narrowed.test\"")
                + ", \"mcpb\": "
                + agent.formatted("\"other.test\"")
                + "}}",
            "\"0\"");
    assertThat(put.status()).as(put.body()).isEqualTo(200);
    // The instance egress policy narrows mcpa's list to allowed.test: the tools' descriptions must
    // name the effective list (what the proxy enforces), not the agent's own.
    ApiClient.Answer policy =
        send(
            "PUT",
            "/api/admin/platform/egress-policy",
            admin,
            "{\"scopes\": {\"mcpa\": {\"allow\": [\"allowed.test\"]}}, \"default\": \"unrestricted\","
                + " \"reason\": \"McpClientIT: the effective list is narrower than the agent's\"}",
            "\"0\"");
    assertThat(policy.status()).as(policy.body()).isEqualTo(200);
  }

  @AfterAll
  static void stop() throws Exception {
    if (serve != null && serve.isAlive()) {
      serve.destroy();
      if (!serve.waitFor(60, TimeUnit.SECONDS)) {
        serve.destroyForcibly();
      }
    }
  }

  @Test
  void theTypeScriptSdkClientUsesTheToolsOverBothTransports() throws Exception {
    installClient();
    List<String> stdio =
        List.of(
            java(),
            "-jar",
            CliProcess.JAR.toAbsolutePath().toString(),
            "mcp",
            "--url",
            base,
            "--token-file",
            data.resolve("token-a").toString());
    // The Node test's own admin-API calls (sessions opened and ended beside the tools) go through
    // a relay that checks each against openapi.json; the MCP traffic goes to serve itself.
    CheckingRelay relay = CheckingRelay.to(base);
    ProcessBuilder node =
        new ProcessBuilder("node", "--test", "--test-reporter=spec", "mcp-client.test.mjs")
            .directory(CLIENT.toFile())
            .redirectErrorStream(true);
    node.environment()
        .putAll(
            Map.of(
                "API_URL", base,
                "CHECKED_URL", relay.baseUrl(),
                "TOKEN_A_FILE", data.resolve("token-a").toString(),
                "TOKEN_B_FILE", data.resolve("token-b").toString(),
                "STDIO_JSON", JSON.writeValueAsString(stdio),
                "NO_COLOR", "1"));
    Process test = node.start();
    String out;
    try (relay) {
      out = new String(test.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(test.waitFor(15, TimeUnit.MINUTES)).as("node --test ended").isTrue();
    }
    System.out.println(out);
    System.out.println("McpClientIT: the Node test's admin-API exchanges: " + relay.relayed());
    assertThat(relay.violations()).as("the Node test's exchanges against openapi.json").isEmpty();
    // Three sessions opened (one per transport beside the tools, one for the Inspector), each
    // ended: the relay saw them, so the check above is over real traffic.
    assertThat(relay.relayed())
        .filteredOn(e -> e.startsWith("POST /api/admin/platform/agent-sandbox/sessions → 201"))
        .hasSize(3);
    assertThat(relay.relayed())
        .filteredOn(e -> e.startsWith("DELETE /api/admin/platform/agent-sandbox/runs/"))
        .hasSize(3);
    assertThat(test.exitValue()).as("node --test mcp-client.test.mjs:\n" + out).isZero();
    // The spec reporter's summary: every test passed, and some ran.
    assertThat(out).contains("ℹ fail 0").containsPattern("ℹ pass [1-9]");

    // The runs the tools started are token A's on every row they caused.
    for (String transport : List.of("http", "stdio")) {
      ApiClient.Answer rows =
          send(
              "GET",
              "/api/admin/platform/audit?label="
                  + URLEncoder.encode("task-ref=mcp-" + transport, StandardCharsets.UTF_8),
              admin,
              null,
              null);
      assertThat(rows.status()).as(rows.body()).isEqualTo(200);
      List<String> actors = new ArrayList<>();
      List<String> types = new ArrayList<>();
      for (JsonNode row : rows.json().path("rows")) {
        actors.add(row.path("actor").asText());
        types.add(row.path("type").asText());
      }
      assertThat(types)
          .as(transport + ": " + rows.body())
          .contains("agent_sandbox.launch", "agent_sandbox.egress.deny");
      assertThat(actors).as(transport + ": " + types).containsOnly("mcp-a");
    }
  }

  /** The test folder with its pinned SDK, installed from npm (each build copies the sources). */
  private static void installClient() throws IOException, InterruptedException {
    Files.createDirectories(CLIENT);
    for (String name : List.of("package.json", "package-lock.json", "mcp-client.test.mjs")) {
      Files.copy(
          CLIENT_SOURCE.resolve(name), CLIENT.resolve(name), StandardCopyOption.REPLACE_EXISTING);
    }
    Process install =
        new ProcessBuilder("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
            .directory(CLIENT.toFile())
            .redirectErrorStream(true)
            .start();
    String out = new String(install.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(install.waitFor(10, TimeUnit.MINUTES)).as("npm ci ended").isTrue();
    assertThat(install.exitValue()).as("npm ci in " + CLIENT + ":\n" + out).isZero();
  }

  private static String createToken(String db, String name, String scopes, String... more)
      throws IOException, InterruptedException {
    List<String> command =
        new ArrayList<>(
            List.of(
                java(),
                "-jar",
                CliProcess.JAR.toString(),
                "token",
                "create",
                "--db",
                db,
                "--name",
                name,
                "--scopes",
                scopes));
    command.addAll(List.of(more));
    Process create =
        new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
    String out = new String(create.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(create.waitFor(120, TimeUnit.SECONDS)).isTrue();
    assertThat(create.exitValue()).as("token create " + name).isZero();
    return out.strip();
  }

  private static ApiClient.Answer send(
      String method, String path, String token, String body, String ifMatch) {
    HttpRequest.Builder request = api.builder(path, token);
    if (ifMatch != null) {
      request.header("If-Match", ifMatch);
    }
    request.header("Content-Type", "application/json");
    request.method(
        method,
        body == null
            ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body));
    return api.send(request);
  }

  private static String java() {
    return ProcessHandle.current().info().command().orElse("java");
  }
}
