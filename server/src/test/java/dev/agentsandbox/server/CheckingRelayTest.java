package dev.agentsandbox.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.agentsandbox.testing.api.CheckingRelay;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The relay a non-Java test's admin-API calls go through (McpClientIT's Node test): driven by curl
 * against a real server, it hands back what the server answered, status, body and headers alike,
 * and keeps each exchange openapi.json does not describe instead of passing it silently.
 */
class CheckingRelayTest {
  private static final String CONFIG = "/api/admin/platform/agent-sandbox";

  @TempDir Path dir;
  private ApiFixture api;
  private CheckingRelay relay;

  @BeforeEach
  void start() throws Exception {
    api = new ApiFixture("jdbc:sqlite:" + dir.resolve("store.db"));
    relay = CheckingRelay.to(api.server.baseUrl());
  }

  @AfterEach
  void stop() {
    relay.close();
    api.close();
  }

  @Test
  void documentedExchangesPassThroughUnchangedAndAreCounted() throws Exception {
    String direct = curl(api.server.baseUrl() + CONFIG, "-H", "Authorization: Bearer " + api.admin);
    String relayed = curl(relay.baseUrl() + CONFIG, "-H", "Authorization: Bearer " + api.admin);
    assertThat(relayed).isEqualTo(direct).contains("HTTP/1.1 200").containsIgnoringCase("etag:");
    // A versioned update: the body, its content type and If-Match reach the server; a stale
    // version is the server's 409 (or 412), passed back as it is.
    String stale =
        curl(
            relay.baseUrl() + CONFIG,
            "-X",
            "PUT",
            "-H",
            "Authorization: Bearer " + api.admin,
            "-H",
            "Content-Type: application/json",
            "-H",
            "If-Match: \"7\"",
            "--data",
            "{\"enabled\": true, \"agents\": {}}");
    assertThat(stale)
        .containsPattern("HTTP/1.1 (409|412)")
        .contains("\"error\":\"version_conflict\"");
    String missing =
        curl(
            relay.baseUrl() + CONFIG + "/runs/nosuchrun",
            "-H",
            "Authorization: Bearer " + api.admin);
    assertThat(missing).contains("HTTP/1.1 404");
    assertThat(relay.violations()).isEmpty();
    assertThat(relay.relayed())
        .containsExactly(
            "GET " + CONFIG + " → 200",
            "PUT " + CONFIG + " → 409",
            "GET " + CONFIG + "/runs/nosuchrun → 404");
  }

  @Test
  void anAnswerTheDocumentDoesNotDescribeIsKeptNotPassedSilently() throws Exception {
    // A server that answers the configuration's path with a body its schema does not allow (the
    // real server never does; the relay must notice when one does).
    HttpServer wrong =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    wrong.createContext(
        "/",
        exchange -> {
          byte[] body = "{\"nonsense\": true}".getBytes(StandardCharsets.UTF_8);
          exchange.getResponseHeaders().add("Content-Type", "application/json");
          exchange.sendResponseHeaders(200, body.length);
          exchange.getResponseBody().write(body);
          exchange.close();
        });
    wrong.start();
    try (CheckingRelay toWrong =
        CheckingRelay.to("http://127.0.0.1:" + wrong.getAddress().getPort())) {
      String answer = curl(toWrong.baseUrl() + CONFIG, "-H", "Authorization: Bearer x");
      // The client sees that server's answer all the same...
      assertThat(answer).contains("HTTP/1.1 200").endsWith("{\"nonsense\": true}");
      // ...and the test that owns the relay sees what the document does not allow.
      assertThat(toWrong.violations())
          .singleElement()
          .asString()
          .startsWith("GET " + CONFIG + ":")
          .contains("nonsense");
    } finally {
      wrong.stop(0);
    }
  }

  @Test
  void aRequestTheServerRefusesIsPassedBackAsItsAnswerAndIsDocumented() throws Exception {
    String answer =
        curl(
            relay.baseUrl() + CONFIG + "/runs?no_such_parameter=1",
            "-H",
            "Authorization: Bearer " + api.admin);
    assertThat(answer).contains("HTTP/1.1 400").contains("no_such_parameter");
    assertThat(relay.violations()).isEmpty();
    assertThat(relay.relayed()).containsExactly("GET " + CONFIG + "/runs → 400");
  }

  private static String curl(String url, String... options) throws Exception {
    List<String> command = new ArrayList<>(List.of("curl", "-sS", "-i", "--max-time", "30"));
    command.addAll(List.of(options));
    command.add(url);
    Process curl = new ProcessBuilder(command).redirectErrorStream(true).start();
    String out = new String(curl.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(curl.waitFor(60, TimeUnit.SECONDS)).as("curl ended").isTrue();
    assertThat(curl.exitValue()).as(out).isZero();
    // The status line, the headers by name (lower case, sorted: two servers order them apart) and
    // the body. Date differs between two answers and the framing between two servers; nothing
    // else may.
    String[] parts = out.split("\r\n\r\n", 2);
    String[] head = parts[0].split("\r\n");
    List<String> headers = new ArrayList<>();
    for (int i = 1; i < head.length; i++) {
      String[] field = head[i].split(":", 2);
      String name = field[0].trim().toLowerCase(Locale.ROOT);
      if (!List.of("date", "content-length", "transfer-encoding").contains(name)) {
        headers.add(name + ":" + field[1].trim());
      }
    }
    Collections.sort(headers);
    return head[0]
        + "\n"
        + String.join("\n", headers)
        + "\n\n"
        + (parts.length > 1 ? parts[1] : "");
  }
}
