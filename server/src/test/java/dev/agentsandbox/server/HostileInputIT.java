package dev.agentsandbox.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.testing.api.ApiClient;
import dev.agentsandbox.testing.api.ApiClient.Answer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Hostile input at the admin API on loopback: each gets a clear error or a closed connection, the
 * server keeps answering others, and nothing is written (configuration and audit unchanged).
 * Hostile bodies and the real client go through the contract-checked {@link ApiClient}; what no
 * HTTP client sends (a trickle, silent connections, a header line past the server's bound) goes
 * over raw sockets. The JDK server's bounds for trickling and idle clients are set short for this
 * JVM in the module's failsafe configuration ({@code sun.net.httpserver.maxReqTime}, {@code
 * jdk.httpserver.maxConnections}); the test reads them from there.
 */
class HostileInputIT {
  private static final String CONFIG = "/api/admin/platform/agent-sandbox";

  @TempDir static Path dir;
  private static ApiFixture api;
  private String configBefore;
  private int auditBefore;

  @BeforeAll
  static void start() throws Exception {
    api = new ApiFixture("jdbc:sqlite:" + dir.resolve("store.db"));
  }

  @AfterAll
  static void stop() {
    if (api != null) {
      api.close();
    }
  }

  @BeforeEach
  void remember() {
    configBefore = api.client.get(CONFIG, api.admin).body();
    auditBefore = auditRows();
  }

  @AfterEach
  void serverStillAnswersAndNothingWasWritten() {
    assertThat(api.client.get("/healthz", null).status()).isEqualTo(200);
    assertThat(api.client.get(CONFIG, api.admin).body()).isEqualTo(configBefore);
    assertThat(auditRows()).as("audit rows").isEqualTo(auditBefore);
  }

  private static int auditRows() {
    return api.store.audit().query(AuditQuery.all(AuditQuery.MAX_LIMIT)).size();
  }

  static Stream<Arguments> bodies() {
    String valid = "{\"enabled\":true,\"backend\":\"docker\"}";
    return Stream.of(
        Arguments.of("JSON nested 100 000 deep", ascii("[".repeat(100_000) + "]".repeat(100_000))),
        Arguments.of(
            "a number of 100 000 digits",
            ascii("{\"agents\":{\"a\":{\"ttl_seconds\":" + "9".repeat(100_000) + "}}}")),
        Arguments.of(
            "a number with a huge exponent",
            ascii("{\"agents\":{\"a\":{\"ttl_seconds\":1e999999999}}}")),
        Arguments.of("duplicate keys", ascii("{\"enabled\":false,\"enabled\":true}")),
        Arguments.of(
            "invalid UTF-8",
            concat(
                ascii("{\"agents\":{\""), new byte[] {(byte) 0xC3, (byte) 0x28}, ascii("\":{}}}"))),
        Arguments.of(
            "a raw NUL byte inside a string",
            concat(ascii("{\"backend\":\"dock"), new byte[] {0}, ascii("er\"}"))),
        Arguments.of(
            "an escaped NUL in an agent name",
            ascii("{\"agents\":{\"co\\u0000der\":{\"allow\":[\"a.test\"]}}}")),
        Arguments.of("a valid document with trailing garbage", ascii(valid + "{}")));
  }

  @ParameterizedTest(name = "{0}: 400")
  @MethodSource("bodies")
  void aHostileBodyIsRefusedWithAClearError(String what, byte[] body) {
    ApiClient client = new ApiClient(api.server.baseUrl(), Duration.ofSeconds(20));
    Answer answer =
        client.send(
            client
                .builder(CONFIG, api.admin)
                .header("Content-Type", "application/json")
                .PUT(HttpRequest.BodyPublishers.ofByteArray(body)));
    assertThat(answer.raw().version()).as(what).isEqualTo(HttpClient.Version.HTTP_1_1);
    assertThat(answer.status()).as(what).isEqualTo(400);
    assertThat(answer.body()).as("the error names what was wrong").contains("\"error\"");
  }

  @Test
  void aHeaderLineOfOneMebibyteIsRefusedOrClosed() throws Exception {
    // Raw: the JDK server refuses it before any handler (no API answer) or just closes.
    byte[] request =
        ascii(
            "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Long: "
                + "a".repeat(1024 * 1024)
                + "\r\nConnection: close\r\n\r\n");
    String answer = send(request, Duration.ofSeconds(20));
    assertThat(answer.isEmpty() || statusLine(answer).matches("HTTP/1.1 4\\d\\d .*"))
        .as("answer: %s", statusLine(answer))
        .isTrue();
  }

  @Test
  void aClientThatTricklesItsRequestIsCutOff() throws Exception {
    long boundSeconds = Long.getLong("sun.net.httpserver.maxReqTime", -1);
    assertThat(boundSeconds).as("maxReqTime set for this JVM").isPositive();
    URI base = URI.create(api.server.baseUrl());
    // Raw: no HTTP client sends a request one byte every 200 ms.
    byte[] head = ascii("PUT " + CONFIG + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ");
    long start = System.nanoTime();
    boolean closed = false;
    try (Socket socket = new Socket(base.getHost(), base.getPort())) {
      socket.setSoTimeout(200);
      OutputStream out = socket.getOutputStream();
      out.write(head);
      // One byte every 200 ms, for at most three times the bound.
      long deadline = start + Duration.ofSeconds(3 * boundSeconds + 5).toNanos();
      while (!closed && System.nanoTime() < deadline) {
        try {
          out.write('a');
          out.flush();
          closed = socket.getInputStream().read() < 0;
        } catch (SocketTimeoutException stillOpen) {
          // nothing to read yet: keep trickling
        } catch (IOException reset) {
          closed = true;
        }
      }
    }
    long seconds = Duration.ofNanos(System.nanoTime() - start).toSeconds();
    assertThat(closed).as("the server closed a trickling client within %d s", seconds).isTrue();
    assertThat(seconds).isLessThanOrEqualTo(3 * boundSeconds + 5);
  }

  @Test
  void idleConnectionsPastTheCapDoNotLockOthersOut() throws Exception {
    int cap = Integer.getInteger("jdk.httpserver.maxConnections", -1);
    assertThat(cap).as("maxConnections set for this JVM").isPositive();
    URI base = URI.create(api.server.baseUrl());
    List<Socket> idle = new ArrayList<>();
    try {
      // Raw: connections that never send a byte, which no HTTP client opens.
      for (int i = 0; i < cap + 100; i++) {
        Socket socket = new Socket();
        socket.connect(new InetSocketAddress(base.getHost(), base.getPort()), 5_000);
        idle.add(socket);
      }
      // Past the cap the JDK server accepts and closes at once: a closed connection, not a hang.
      Socket last = idle.get(idle.size() - 1);
      last.setSoTimeout(10_000);
      assertThat(readsEndOfStream(last)).as("a connection past the cap is closed").isTrue();
      // A real client is served once the silent ones are closed (they get maxReqTime); it retries
      // meanwhile, as clients do on a closed connection.
      long bound = Long.getLong("sun.net.httpserver.maxReqTime", 20);
      ApiClient client = new ApiClient(api.server.baseUrl(), Duration.ofSeconds(5));
      Answer answer =
          Awaitility.await("a real client is served once the silent connections are closed")
              .atMost(Duration.ofSeconds(3 * bound + 10))
              .pollDelay(Duration.ZERO)
              .pollInterval(Duration.ofMillis(500))
              .until(() -> healthz(client), a -> a != null && a.status() == 200);
      assertThat(answer.raw().version()).isEqualTo(HttpClient.Version.HTTP_1_1);
      assertThat(answer.status()).isEqualTo(200);
      int closedByServer = 0;
      for (Socket socket : idle.subList(0, 20)) {
        socket.setSoTimeout(10_000);
        if (readsEndOfStream(socket)) {
          closedByServer++;
        }
      }
      assertThat(closedByServer)
          .as("of the first 20 idle connections, closed by the server")
          .isEqualTo(20);
    } finally {
      for (Socket socket : idle) {
        socket.close();
      }
    }
  }

  /** GET /healthz, checked; null when the connection failed (closed, reset or timed out). */
  private static Answer healthz(ApiClient client) throws InterruptedException {
    try {
      return client.exchange(client.builder("/healthz", null).GET());
    } catch (IOException closedOrTimedOut) {
      return null;
    }
  }

  private static boolean readsEndOfStream(Socket socket) {
    try {
      return socket.getInputStream().read() < 0;
    } catch (SocketTimeoutException stillOpen) {
      return false;
    } catch (IOException reset) {
      return true;
    }
  }

  /** Sends raw bytes and reads until the server closes (or the time-out): the whole answer. */
  private static String send(byte[] request, Duration timeout) throws IOException {
    URI base = URI.create(api.server.baseUrl());
    try (Socket socket = new Socket(base.getHost(), base.getPort())) {
      socket.setSoTimeout((int) timeout.toMillis());
      try {
        socket.getOutputStream().write(request);
        socket.getOutputStream().flush();
      } catch (IOException refusedMidway) {
        // The server may answer and close before it read everything; read what it said.
      }
      ByteArrayOutputStream answer = new ByteArrayOutputStream();
      InputStream in = socket.getInputStream();
      byte[] chunk = new byte[8192];
      try {
        int n;
        while ((n = in.read(chunk)) >= 0) {
          answer.write(chunk, 0, n);
        }
      } catch (IOException closedOrTimedOut) {
        // what arrived is the answer
      }
      return answer.toString(StandardCharsets.UTF_8);
    }
  }

  private static String statusLine(String answer) {
    int end = answer.indexOf("\r\n");
    return end < 0 ? answer : answer.substring(0, end);
  }

  private static byte[] ascii(String text) {
    return text.getBytes(StandardCharsets.US_ASCII);
  }

  private static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] part : parts) {
      out.writeBytes(part);
    }
    return out.toByteArray();
  }
}
