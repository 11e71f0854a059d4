package dev.agentsandbox.server.session;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.policy.event.DecisionRecord;
import dev.agentsandbox.policy.net.Reason;
import dev.agentsandbox.runs.OperatorEgress;
import dev.agentsandbox.runs.RunSettings;
import dev.agentsandbox.runs.local.LocalSessionBackend;
import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.server.RunWiring;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.testing.api.ApiClient;
import dev.agentsandbox.testing.api.ContractCheckedHttpClient;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Sessions through the real HTTP server on loopback, every exchange checked against openapi.json:
 * open, files in (past the 1 MiB JSON limit, bounded by the agent's cap), steps (JSON, NDJSON
 * streamed, background, killed), files out (bytes, a tar, a listing), the timeline, close, and the
 * refusals with their codes and scopes. The backend is the runs module's test backend, whose
 * "sandbox" is local processes in a temporary folder: this tests the API and the run service, not a
 * sandbox (the backends' ITs do that).
 */
class SessionApiTest {
  static final String BASE = "/api/admin/platform/agent-sandbox";
  static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path temp;
  // Kept beside the ApiClient for the downloads: they are compared byte for byte (a tar, random
  // bytes), and ApiClient reads every body as a string.
  final HttpClient http = ContractCheckedHttpClient.create();
  ApiClient api;
  Store store;
  LocalSessionBackend backend;
  AgentSandboxServer server;
  String admin;
  String reader;

  @BeforeEach
  void start() throws Exception {
    store = Store.open("jdbc:sqlite:" + temp.resolve("store.db"));
    backend = new LocalSessionBackend("docker", temp.resolve("sandboxes"), Clock.systemUTC());
    server =
        AgentSandboxServer.start(
            new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
            store,
            new RunWiring(
                List.of(backend),
                OperatorEgress.NONE,
                RunSettings.defaults("session-api").withSpool(temp),
                RunWiring.every(Duration.ofHours(1))));
    api = new ApiClient(server.baseUrl(), Duration.ofSeconds(60));
    admin = store.tokens().create("admin", Scopes.ALL, null).secret();
    reader = store.tokens().create("reader", Set.of(Scopes.READ), null).secret();
    ApiClient.Answer put =
        api.put(
            BASE,
            admin,
            "{\"enabled\": true, \"reason\": \"sessions\", \"agents\": {\"helper\": {\"allow\":"
                + " [\"api.vendor.com\"], \"sessions\": {\"max_file_bytes\": 2097152,"
                + " \"max_stdin_bytes\": 64}}}}");
    assertThat(put.status()).as(put.body()).isEqualTo(200);
  }

  @AfterEach
  void stop() {
    server.close();
    store.close();
  }

  /** A file in: raw bytes, with {@code type} as its Content-Type if not null. */
  ApiClient.Answer put(String path, String token, String type, byte[] body) {
    HttpRequest.Builder builder =
        api.builder(path, token).PUT(HttpRequest.BodyPublishers.ofByteArray(body));
    if (type != null) {
      builder.header("Content-Type", type);
    }
    return api.send(builder);
  }

  HttpResponse<byte[]> getBytes(String path, String token, String accept) throws Exception {
    HttpRequest.Builder builder = api.builder(path, token).GET();
    if (accept != null) {
      builder.header("Accept", accept);
    }
    return http.send(builder.build(), HttpResponse.BodyHandlers.ofByteArray());
  }

  String open() throws Exception {
    ApiClient.Answer opened =
        api.post(BASE + "/sessions", admin, "{\"agent\": \"helper\", \"idle_seconds\": 600}");
    assertThat(opened.status()).as(opened.body()).isEqualTo(201);
    String id = opened.json().get("run_id").asText();
    assertThat(opened.header("Location")).isEqualTo(BASE + "/runs/" + id);
    return id;
  }

  static byte[] tar(String... nameThenContent) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (TarArchiveOutputStream tar = new TarArchiveOutputStream(bytes)) {
      for (int i = 0; i < nameThenContent.length; i += 2) {
        byte[] content = nameThenContent[i + 1].getBytes(StandardCharsets.UTF_8);
        TarArchiveEntry e = new TarArchiveEntry(nameThenContent[i], true);
        e.setSize(content.length);
        tar.putArchiveEntry(e);
        tar.write(content);
        tar.closeArchiveEntry();
      }
    }
    return bytes.toByteArray();
  }

  @Test
  void aSessionIsOpenedWorkedInStepByStepAndClosed() throws Exception {
    String id = open();
    JsonNode run = api.get(BASE + "/runs/" + id, admin).json();
    assertThat(run.get("kind").asText()).isEqualTo("session");
    assertThat(run.get("command").isNull()).isTrue();
    assertThat(run.get("idle_seconds").asInt()).isEqualTo(600);
    assertThat(run.get("steps").asInt()).isZero();

    // a project in as a tar, a file in past the 1 MiB JSON limit
    ApiClient.Answer project =
        put(
            BASE + "/runs/" + id + "/files?path=app",
            admin,
            "application/x-tar",
            tar(
                "calc.py",
                "def add(a, b):\n    return a + b\n",
                "test.sh",
                "grep -q 'a + b' calc.py && echo ok\n"));
    assertThat(project.status()).as(project.body()).isEqualTo(200);
    assertThat(project.json().get("kind").asText()).isEqualTo("folder");
    assertThat(project.json().get("files").asInt()).isEqualTo(2);
    byte[] big = new byte[1536 * 1024];
    new java.util.Random(7).nextBytes(big);
    ApiClient.Answer file =
        put(BASE + "/runs/" + id + "/files?path=/workspace/data/big.bin", admin, null, big);
    assertThat(file.status()).as(file.body()).isEqualTo(200);
    String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(big));
    assertThat(file.json().get("sha256").asText()).isEqualTo(sha);

    // a step, answered as JSON
    ApiClient.Answer step =
        api.post(
            BASE + "/runs/" + id + "/exec",
            admin,
            "{\"command\": [\"sh\", \"test.sh\"], \"cwd\": \"app\", \"timeout_seconds\": 30}");
    assertThat(step.status()).as(step.body()).isEqualTo(200);
    assertThat(step.json().get("stdout").asText()).isEqualTo("ok\n");
    assertThat(step.json().get("end").asText()).isEqualTo("exit");
    assertThat(step.json().get("step").asInt()).isEqualTo(1);

    // a step streamed as NDJSON: its lines as they come, then its result
    ApiClient.Answer streamed =
        api.send(
            api.builder(BASE + "/runs/" + id + "/exec", admin)
                .header("Content-Type", "application/json")
                .header("Accept", "application/x-ndjson")
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"command\": [\"sh\", \"-c\", \"echo one; echo two >&2; cat\"], \"stdin\": \"three\\n\"}")));
    assertThat(streamed.status()).isEqualTo(200);
    List<JsonNode> lines = new ArrayList<>();
    for (String line : streamed.body().split("\n")) {
      lines.add(JSON.readTree(line));
    }
    assertThat(lines).anySatisfy(l -> assertThat(l.path("stdout").asText()).isEqualTo("one\n"));
    assertThat(lines).anySatisfy(l -> assertThat(l.path("stderr").asText()).isEqualTo("two\n"));
    assertThat(lines).anySatisfy(l -> assertThat(l.path("stdout").asText()).isEqualTo("three\n"));
    JsonNode result = lines.get(lines.size() - 1).get("result");
    assertThat(result.get("exit_status").asInt()).isZero();
    assertThat(result.get("stdin_bytes").asInt()).isEqualTo(6);

    // a background step, a decision while it runs, its kill
    ApiClient.Answer bg =
        api.post(
            BASE + "/runs/" + id + "/exec",
            admin,
            "{\"command\": [\"sleep\", \"60\"], \"background\": true}");
    assertThat(bg.status()).as(bg.body()).isEqualTo(202);
    assertThat(bg.header("Location")).isEqualTo(BASE + "/runs/" + id + "/steps/3");
    assertThat(bg.json().get("status").asText()).isEqualTo("running");
    backend
        .sandbox(id)
        .decide(
            JSON.writeValueAsString(
                new DecisionRecord(
                        Instant.now(),
                        id,
                        "10.0.0.2:4000",
                        "CONNECT",
                        "pypi.org",
                        443,
                        false,
                        Reason.NOT_ALLOWED,
                        null,
                        0,
                        0,
                        1,
                        false,
                        null,
                        "refused by the test")
                    .toTree()));
    assertThat(api.delete(BASE + "/runs/" + id + "/steps/3", admin).status()).isEqualTo(202);
    JsonNode killed = awaitStepEnd(id, 3);
    assertThat(killed.get("end").asText()).isEqualTo("killed");
    assertThat(killed.get("egress_denied").asInt()).isEqualTo(1);
    assertThat(killed.get("egress").get(0).get("host").asText()).isEqualTo("pypi.org");
    ApiClient.Answer again = api.delete(BASE + "/runs/" + id + "/steps/3", admin);
    assertThat(again.status()).isEqualTo(409);
    assertThat(again.json().get("error").asText()).isEqualTo("step_ended");

    // the steps, one step's output, files out
    JsonNode steps = api.get(BASE + "/runs/" + id + "/steps", reader).json();
    assertThat(steps.get("steps")).extracting(s -> s.get("step").asInt()).containsExactly(1, 2, 3);
    assertThat(steps.get("steps").get(0).has("stdout")).as("a listing has summaries").isFalse();
    ApiClient.Answer output = api.get(BASE + "/runs/" + id + "/steps/2/output", reader);
    // Two streams, each pumped on its own: their lines interleave as they came.
    assertThat(output.body().split("\n")).containsExactlyInAnyOrder("one", "two", "three");
    HttpResponse<byte[]> back =
        getBytes(BASE + "/runs/" + id + "/files?path=data/big.bin", reader, null);
    assertThat(back.statusCode()).isEqualTo(200);
    assertThat(back.body()).isEqualTo(big);
    assertThat(back.headers().firstValue("X-Agent-Sandbox-Sha256")).contains(sha);
    assertThat(back.headers().firstValue("Content-Length")).contains(Integer.toString(big.length));
    HttpResponse<byte[]> folder =
        getBytes(BASE + "/runs/" + id + "/files?path=app", reader, "application/x-tar");
    assertThat(folder.statusCode()).isEqualTo(200);
    List<String> names = new ArrayList<>();
    try (TarArchiveInputStream in =
        new TarArchiveInputStream(new ByteArrayInputStream(folder.body()))) {
      for (TarArchiveEntry e = in.getNextEntry(); e != null; e = in.getNextEntry()) {
        names.add(e.getName());
      }
    }
    assertThat(names).containsExactlyInAnyOrder("calc.py", "test.sh");
    ApiClient.Answer listing = api.get(BASE + "/runs/" + id + "/files?path=app", reader);
    assertThat(listing.status()).as("a folder without Accept").isEqualTo(406);
    ApiClient.Answer entries =
        api.send(
            api.builder(BASE + "/runs/" + id + "/files?path=app", reader)
                .header("Accept", "application/json")
                .GET());
    assertThat(entries.json().get("entries"))
        .extracting(e -> e.get("name").asText())
        .containsExactly("calc.py", "test.sh");

    // the timeline reconstructs the steps with their decisions
    JsonNode timeline = api.get(BASE + "/runs/" + id + "/timeline", reader).json();
    assertThat(timeline.get("kind").asText()).isEqualTo("session");
    assertThat(timeline.get("steps"))
        .extracting(s -> s.get("step").asInt())
        .containsExactly(1, 2, 3);
    assertThat(timeline.get("steps").get(0).get("command"))
        .extracting(JsonNode::asText)
        .containsExactly("sh", "test.sh");
    assertThat(timeline.get("steps").get(2).get("egress").get("denied").get(0).get("host").asText())
        .isEqualTo("pypi.org");
    assertThat(timeline.get("steps").get(2).get("killed_by").get("token").asText())
        .isEqualTo("admin");
    assertThat(timeline.get("files"))
        .extracting(f -> f.get("op").asText())
        .startsWith("put", "put");

    // closed: its result, then no more steps; its steps stay readable
    ApiClient.Answer closed = api.delete(BASE + "/runs/" + id, admin);
    assertThat(closed.status()).as(closed.body()).isEqualTo(200);
    assertThat(closed.json().get("status").asText()).isEqualTo("closed");
    assertThat(closed.json().get("end").asText()).isEqualTo("closed");
    ApiClient.Answer late =
        api.post(BASE + "/runs/" + id + "/exec", admin, "{\"command\": [\"true\"]}");
    assertThat(late.status()).isEqualTo(409);
    assertThat(late.json().get("error").asText()).isEqualTo("run_ended");
    assertThat(api.get(BASE + "/runs/" + id + "/steps/1", reader).status()).isEqualTo(200);
    assertThat(api.get(BASE + "/runs?kind=session", reader).json().get("runs"))
        .extracting(r -> r.get("run_id").asText())
        .containsExactly(id);
    assertThat(
            api.get(BASE + "/runs/" + id + "/timeline", reader)
                .json()
                .get("end")
                .get("closed_by")
                .get("token")
                .asText())
        .isEqualTo("admin");
  }

  JsonNode awaitStepEnd(String id, int step) throws Exception {
    for (int i = 0; i < 200; i++) {
      JsonNode view = api.get(BASE + "/runs/" + id + "/steps/" + step, reader).json();
      if (view.get("status").asText().equals("ended")) {
        return view;
      }
      Thread.sleep(100);
    }
    throw new AssertionError("step " + step + " did not end within 20 s");
  }

  @Test
  void refusalsAnswerTheirCodesAndScopes() throws Exception {
    String id = open();
    record Case(String name, ApiClient.Answer answer, int status, String error) {}
    List<Case> cases =
        List.of(
            new Case(
                "a path outside /workspace",
                put(BASE + "/runs/" + id + "/files?path=/etc/passwd", admin, null, new byte[1]),
                400,
                "invalid_path"),
            new Case(
                "a .. in a path",
                put(BASE + "/runs/" + id + "/files?path=a/../../x", admin, null, new byte[1]),
                400,
                "invalid_path"),
            new Case(
                "a file over the agent's cap, past the JSON limit",
                put(BASE + "/runs/" + id + "/files?path=huge.bin", admin, null, new byte[3 << 20]),
                413,
                "file_too_large"),
            new Case(
                "a hostile tar",
                put(
                    BASE + "/runs/" + id + "/files?path=d",
                    admin,
                    "application/x-tar",
                    tar("../escape", "x")),
                400,
                "invalid_archive"),
            new Case(
                "a body type that is no file",
                put(BASE + "/runs/" + id + "/files?path=a.txt", admin, "text/plain", new byte[1]),
                415,
                "unsupported_media_type"),
            new Case(
                "a reader putting a file",
                put(BASE + "/runs/" + id + "/files?path=a.txt", reader, null, new byte[1]),
                403,
                "missing_scope"),
            new Case(
                "a reader running a step",
                api.post(BASE + "/runs/" + id + "/exec", reader, "{\"command\": [\"true\"]}"),
                403,
                "missing_scope"),
            new Case(
                "stdin over the agent's cap",
                api.post(
                    BASE + "/runs/" + id + "/exec",
                    admin,
                    "{\"command\": [\"cat\"], \"stdin\": \"" + "x".repeat(65) + "\"}"),
                413,
                "stdin_too_large"),
            new Case(
                "an unknown field",
                api.post(
                    BASE + "/runs/" + id + "/exec",
                    admin,
                    "{\"command\": [\"true\"], \"shell\": true}"),
                400,
                "invalid_request"),
            new Case(
                "a cwd outside /workspace",
                api.post(
                    BASE + "/runs/" + id + "/exec",
                    admin,
                    "{\"command\": [\"true\"], \"cwd\": \"/\"}"),
                400,
                "invalid_path"),
            new Case(
                "a proxy variable for a step",
                api.post(
                    BASE + "/runs/" + id + "/exec",
                    admin,
                    "{\"command\": [\"true\"], \"env\": {\"https_proxy\": \"http://x:1\"}}"),
                400,
                "env_refused"),
            new Case(
                "a missing file",
                api.get(BASE + "/runs/" + id + "/files?path=nothing.txt", reader),
                404,
                "file_not_found"),
            new Case(
                "a step that is not there",
                api.get(BASE + "/runs/" + id + "/steps/42", reader),
                404,
                "step_not_found"),
            new Case(
                "a step number that is none",
                api.get(BASE + "/runs/" + id + "/steps/zero", reader),
                404,
                "step_not_found"),
            new Case(
                "an unknown run",
                api.post(BASE + "/runs/zzzz9999/exec", admin, "{\"command\": [\"true\"]}"),
                404,
                "run_not_found"),
            new Case(
                "an idle time over the ttl",
                api.post(
                    BASE + "/sessions", admin, "{\"agent\": \"helper\", \"idle_seconds\": 100000}"),
                400,
                "invalid_request"),
            new Case(
                "an agent not listed",
                api.post(BASE + "/sessions", admin, "{\"agent\": \"stranger\"}"),
                404,
                "agent_not_listed"));
    for (Case c : cases) {
      assertThat(c.answer().status()).as(c.name() + ": " + c.answer().body()).isEqualTo(c.status());
      assertThat(c.answer().json().get("error").asText()).as(c.name()).isEqualTo(c.error());
    }
    assertThat(cases.get(3).answer().json().get("reason").asText()).isEqualTo("invalid_path");

    ApiClient.Answer oneShot =
        api.post(BASE + "/run", admin, "{\"agent\": \"helper\", \"command\": [\"true\"]}");
    assertThat(oneShot.status()).as(oneShot.body()).isEqualTo(200);
    String runId = oneShot.json().get("run_id").asText();
    ApiClient.Answer notASession =
        api.post(BASE + "/runs/" + runId + "/exec", admin, "{\"command\": [\"true\"]}");
    assertThat(notASession.status()).isEqualTo(409);
    assertThat(notASession.json().get("error").asText()).isEqualTo("not_a_session");
    assertThat(api.delete(BASE + "/runs/" + id, admin).status()).isEqualTo(200);
  }

  /**
   * A file refused past the JSON limit (over the agent's cap) leaves its keep-alive connection
   * usable, or its answer says {@code Connection: close}: the next request on the same connection
   * is answered. Closing the upload's stream early ended the connection silently after the 413, and
   * a client's next request on it got no answer (seen as "header parser received no bytes").
   */
  @Test
  void aRefusedUploadLeavesItsConnectionUsableOrSaysItCloses() throws Exception {
    String id = open();
    // A raw socket, not ApiClient: the point is one connection, reused after a refused body it
    // may not have read, and what the server's bytes on it say, which an HTTP client hides.
    URI base = URI.create(server.baseUrl());
    byte[] over = new byte[3 << 20];
    try (java.net.Socket socket = new java.net.Socket(base.getHost(), base.getPort())) {
      socket.setSoTimeout(30_000);
      var out = socket.getOutputStream();
      var in = new java.io.BufferedInputStream(socket.getInputStream());
      String head =
          "PUT "
              + BASE
              + "/runs/"
              + id
              + "/files?path=huge.bin HTTP/1.1\r\nHost: "
              + base.getAuthority()
              + "\r\nAuthorization: Bearer "
              + admin
              + "\r\nContent-Type: application/octet-stream\r\nContent-Length: "
              + over.length
              + "\r\n\r\n";
      out.write(head.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      out.write(over);
      out.flush();
      String first = readAnswer(in);
      assertThat(first).startsWith("HTTP/1.1 413").contains("file_too_large");
      if (first.toLowerCase(java.util.Locale.ROOT).contains("\r\nconnection: close")) {
        return;
      }
      out.write(
          ("GET "
                  + BASE
                  + "/runs/"
                  + id
                  + " HTTP/1.1\r\nHost: "
                  + base.getAuthority()
                  + "\r\nAuthorization: Bearer "
                  + admin
                  + "\r\n\r\n")
              .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      out.flush();
      assertThat(readAnswer(in))
          .as("the next request on a connection kept alive after the 413")
          .startsWith("HTTP/1.1 200");
    }
  }

  /** One answer's head and its Content-Length body, or what came before the connection ended. */
  private static String readAnswer(java.io.InputStream in) throws java.io.IOException {
    StringBuilder head = new StringBuilder();
    int c;
    while (!head.toString().endsWith("\r\n\r\n") && (c = in.read()) >= 0) {
      head.append((char) c);
    }
    java.util.regex.Matcher length =
        java.util.regex.Pattern.compile("(?i)\r\ncontent-length: *(\\d+)").matcher(head);
    if (length.find()) {
      head.append(
          new String(
              in.readNBytes(Integer.parseInt(length.group(1))),
              java.nio.charset.StandardCharsets.UTF_8));
    }
    return head.toString();
  }

  @Test
  void aSandboxThatDoesNotComeUpAnswersSessionFailedNamingItsRun() throws Exception {
    backend.openFails(true);

    ApiClient.Answer failed = api.post(BASE + "/sessions", admin, "{\"agent\": \"helper\"}");

    assertThat(failed.status()).as(failed.body()).isEqualTo(502);
    assertThat(failed.json().get("error").asText()).isEqualTo("session_failed");
    String runId = failed.json().get("run_id").asText();
    assertThat(api.get(BASE + "/runs/" + runId, admin).json().get("status").asText())
        .isEqualTo("failed");
  }
}
