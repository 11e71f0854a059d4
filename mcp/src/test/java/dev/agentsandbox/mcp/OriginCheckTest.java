package dev.agentsandbox.mcp;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@code /mcp}'s {@code Origin} rule (MCP streamable HTTP: validate it against DNS rebinding, 403
 * when present and invalid), one named row per case, each sent over real HTTP to the handler on a
 * loopback port. A refused request is 403 {@code origin_refused}; an accepted one goes on to the
 * token check, which answers this token-less request 401 {@code missing_token}: the Origin check
 * let it through and nothing else was skipped.
 */
class OriginCheckTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private static HttpServer server;
  private static int port;

  @BeforeAll
  static void start() throws Exception {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    port = server.getAddress().getPort();
    URI self = URI.create("http://127.0.0.1:" + port);
    server.createContext(
        McpHttpHandler.PATH,
        new McpHttpHandler(self, OriginCheck.listeningOn(server.getAddress())));
    server.start();
  }

  @AfterAll
  static void stop() {
    server.stop(0);
  }

  /** {@code %d} in an origin is this server's port; {@code %o} another port of this machine. */
  static Stream<Arguments> origins() {
    return Stream.of(
        row("no Origin: an MCP host, an SDK client, curl", List.of(), OriginCheck.Reason.ABSENT),
        row("own origin by address", List.of("http://127.0.0.1:%d"), OriginCheck.Reason.OWN_ORIGIN),
        row("own origin by name", List.of("http://localhost:%d"), OriginCheck.Reason.OWN_ORIGIN),
        row("own origin over IPv6", List.of("http://[::1]:%d"), OriginCheck.Reason.OWN_ORIGIN),
        row(
            "own origin, IPv6 written out",
            List.of("http://[0:0:0:0:0:0:0:1]:%d"),
            OriginCheck.Reason.OWN_ORIGIN),
        row(
            "own origin in capitals (scheme and host are case-insensitive)",
            List.of("HTTP://LocalHost:%d"),
            OriginCheck.Reason.OWN_ORIGIN),
        row("a web page's origin", List.of("https://evil.test"), OriginCheck.Reason.FOREIGN_ORIGIN),
        row(
            "DNS rebinding: the page's name, now resolving to 127.0.0.1, on this port",
            List.of("http://evil.test:%d"),
            OriginCheck.Reason.FOREIGN_ORIGIN),
        row(
            "a name that starts like this host",
            List.of("http://127.0.0.1.evil.test:%d"),
            OriginCheck.Reason.FOREIGN_ORIGIN),
        row(
            "another local web application (this host, another port)",
            List.of("http://127.0.0.1:%o"),
            OriginCheck.Reason.FOREIGN_ORIGIN),
        row(
            "this host and port over https (another origin)",
            List.of("https://127.0.0.1:%d"),
            OriginCheck.Reason.FOREIGN_ORIGIN),
        row(
            "this host on the default port",
            List.of("http://127.0.0.1"),
            OriginCheck.Reason.FOREIGN_ORIGIN),
        row(
            "opaque origin (a sandboxed frame, a file: page)",
            List.of("null"),
            OriginCheck.Reason.OPAQUE_ORIGIN),
        row(
            "two Origin headers, the first our own",
            List.of("http://127.0.0.1:%d", "https://evil.test"),
            OriginCheck.Reason.SEVERAL_ORIGINS),
        row(
            "a list of origins in one header",
            List.of("http://127.0.0.1:%d https://evil.test"),
            OriginCheck.Reason.SEVERAL_ORIGINS),
        row(
            "user information hiding the host (this host is the user, evil.test the host)",
            List.of("http://127.0.0.1:%d@evil.test"),
            OriginCheck.Reason.MALFORMED),
        row(
            "own origin with user information",
            List.of("http://x@127.0.0.1:%d"),
            OriginCheck.Reason.MALFORMED),
        row(
            "own origin with a path",
            List.of("http://127.0.0.1:%d/"),
            OriginCheck.Reason.MALFORMED),
        row("another scheme", List.of("file://127.0.0.1:%d"), OriginCheck.Reason.MALFORMED),
        row("no scheme", List.of("127.0.0.1:%d"), OriginCheck.Reason.MALFORMED),
        row("empty", List.of(""), OriginCheck.Reason.MALFORMED));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("origins")
  void eachOriginIsServedOrRefusedAsItsRowSays(
      String name, List<String> templates, OriginCheck.Reason expected) throws Exception {
    List<String> values = templates.stream().map(OriginCheckTest::fill).toList();
    assertThat(OriginCheck.listeningOn(server.getAddress()).decide(values).reason())
        .as(name + ": " + values)
        .isEqualTo(expected);

    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + McpHttpHandler.PATH))
            .timeout(Duration.ofSeconds(10))
            .header("Content-Type", "application/json")
            .POST(
                HttpRequest.BodyPublishers.ofString(
                    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}"));
    values.forEach(value -> request.header("Origin", value));
    HttpResponse<String> answer = HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
    JsonNode body = JSON.readTree(answer.body());
    if (expected.accepted()) {
      assertThat(answer.statusCode()).as(name + ": " + answer.body()).isEqualTo(401);
      assertThat(body.path("error").asText()).isEqualTo("missing_token");
    } else {
      assertThat(answer.statusCode()).as(name + ": " + answer.body()).isEqualTo(403);
      assertThat(body.path("error").asText()).isEqualTo("origin_refused");
      assertThat(body.path("message").asText())
          .as("the message names the origin it refused")
          .startsWith("serve /mcp to a request from origin '")
          .contains("DNS rebinding");
    }
  }

  @Test
  void aServerOnOneAddressOwnsOnlyThatAddressesOrigin() throws Exception {
    OriginCheck check =
        OriginCheck.listeningOn(
            new InetSocketAddress(InetAddress.getByAddress(new byte[] {10, 1, 2, 3}), 8080));
    assertThat(check.decide(List.of("http://10.1.2.3:8080")).reason())
        .isEqualTo(OriginCheck.Reason.OWN_ORIGIN);
    assertThat(check.decide(List.of("http://127.0.0.1:8080")).reason())
        .as("loopback is not this server's origin when it listens elsewhere")
        .isEqualTo(OriginCheck.Reason.FOREIGN_ORIGIN);
    assertThat(check.decide(List.of("http://localhost:8080")).reason())
        .isEqualTo(OriginCheck.Reason.FOREIGN_ORIGIN);
  }

  @Test
  void aServerOnEveryAddressOwnsTheLoopbackOrigins() {
    OriginCheck check = OriginCheck.listeningOn(new InetSocketAddress(8080));
    assertThat(check.decide(List.of("http://localhost:8080")).reason())
        .isEqualTo(OriginCheck.Reason.OWN_ORIGIN);
    assertThat(check.decide(List.of("http://192.0.2.7:8080")).reason())
        .as("an address of the host other than loopback is refused: its Host is not evidence")
        .isEqualTo(OriginCheck.Reason.FOREIGN_ORIGIN);
  }

  private static String fill(String template) {
    return template
        .replace("%d", Integer.toString(port))
        .replace("%o", Integer.toString(port == 65535 ? port - 1 : port + 1));
  }

  private static Arguments row(String name, List<String> origins, OriginCheck.Reason reason) {
    return Arguments.of(name, origins, reason);
  }
}
