package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.agentsandbox.policy.event.DecisionRecord;
import dev.agentsandbox.policy.net.Reason;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The proxy in-process on an ephemeral loopback port, driven by curl and raw sockets against real
 * upstreams on loopback. Every refusal row also checks what did NOT happen: no lookup for names
 * refused before DNS, no request at the trap server for refused addresses.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ProxyIT {
  private Fixture fixture;
  private RecordingResolver resolver;
  private RecordingListener decisions;
  private ProxyMetrics metrics;
  private ProxyServer proxy;
  @TempDir Path temp;

  @BeforeAll
  void start() throws Exception {
    fixture = new Fixture();
    resolver = new RecordingResolver(new StaticHostResolver(fixture.hosts));
    decisions = new RecordingListener();
    metrics = new ProxyMetrics();
    proxy =
        ProxyServer.start(fixture.config(Limits.DEFAULTS), resolver, List.of(decisions), metrics);
  }

  @AfterAll
  void stop() {
    proxy.close();
    fixture.close();
  }

  private InetSocketAddress proxyAddress() {
    return proxy.boundAddress();
  }

  private String proxyUrl() {
    return "http://127.0.0.1:" + proxyAddress().getPort();
  }

  private CurlResult curl(String... args) throws Exception {
    List<String> command =
        new ArrayList<>(List.of(Curl.path(), "-sS", "-i", "--max-time", "20", "-x", proxyUrl()));
    command.addAll(List.of(args));
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
    return new CurlResult(process.exitValue(), output);
  }

  record CurlResult(int exit, String output) {}

  @Test
  void curlPlainHttpReachesAnAllowedUpstreamWithHostRewrittenAndProxyHeadersStripped()
      throws Exception {
    CurlResult result =
        curl(
            "-H",
            "Host: evil.test",
            "-H",
            "Proxy-Authorization: Basic c2VjcmV0OnNlY3JldA==",
            "http://api.test:" + fixture.port + "/plain?q=1");
    assertThat(result.output()).startsWith("HTTP/1.1 200").contains("hello from api");
    Upstream.Seen seen = seenAt(fixture.api, "/plain?q=1");
    assertThat(seen.header("Host")).isEqualTo("api.test:" + fixture.port);
    assertThat(seen.header("Proxy-Authorization")).isNull();
    assertThat(seen.header("Proxy-Connection")).isNull();
    DecisionRecord record =
        decisions.await(
            r -> r.host().equals("api.test") && r.method().equals("GET") && r.allowed());
    assertThat(record.address()).isEqualTo(Fixture.PERMITTED);
    assertThat(record.bytesDown()).isEqualTo("hello from api".length());
    assertThat(record.runId()).isEqualTo("run-test");
  }

  @Test
  void curlHttpsGoesThroughATunnelToATlsUpstream() throws Exception {
    Path ca = fixture.certificate.writePem(temp);
    CurlResult result =
        curl("--cacert", ca.toString(), "https://tls.test:" + fixture.tls.port() + "/secure");
    assertThat(result.exit()).as(result.output()).isZero();
    assertThat(result.output())
        .contains("HTTP/1.1 200 Connection established")
        .contains("hello from tls");
    DecisionRecord record =
        decisions.await(
            r -> r.host().equals("tls.test") && r.method().equals("CONNECT") && r.allowed());
    assertThat(record.bytesUp()).isPositive();
    assertThat(record.bytesDown()).isPositive();
  }

  @Test
  void curlToAnUnlistedHostIsRefusedWith403BeforeAnyLookup() throws Exception {
    CurlResult plain = curl("http://not-allowed.test:" + fixture.port + "/x");
    assertThat(plain.output())
        .startsWith("HTTP/1.1 403")
        .containsIgnoringCase("X-Agent-Sandbox-Denied: not-allowed")
        .contains("not-allowed.test")
        .contains("not-allowed");
    CurlResult tunnel = curl("-p", "http://not-allowed.test:" + fixture.port + "/x");
    assertThat(tunnel.output())
        .contains("HTTP/1.1 403")
        .containsIgnoringCase("X-Agent-Sandbox-Denied: not-allowed");
    assertThat(resolver.lookups()).doesNotContain("not-allowed.test");
    assertThat(fixture.api.seen()).noneMatch(s -> s.path().equals("/x"));
  }

  static Stream<Arguments> connectRefusals() {
    return Stream.of(
        row(
            "unlisted host is refused before DNS",
            "not-allowed.test:P",
            403,
            Reason.NOT_ALLOWED,
            null,
            false),
        row(
            "wildcard does not match its apex",
            "wild.test:P",
            403,
            Reason.NOT_ALLOWED,
            null,
            false),
        row("decimal IP literal", "127.0.0.2:P", 403, Reason.IP_LITERAL, null, false),
        row("short IP literal 127.2", "127.2:P", 403, Reason.IP_LITERAL, null, false),
        row("integer IP literal", "2130706434:P", 403, Reason.IP_LITERAL, null, false),
        row("hex IP literal", "0x7f.0.0.2:P", 403, Reason.IP_LITERAL, null, false),
        row("octal IP literal", "0177.0.0.2:P", 403, Reason.IP_LITERAL, null, false),
        row(
            "bracketed mapped IPv6 literal",
            "[::ffff:127.0.0.2]:P",
            403,
            Reason.IP_LITERAL,
            null,
            false),
        row(
            "port not named by any entry",
            "api.test:22",
            403,
            Reason.PORT_NOT_ALLOWED,
            null,
            false),
        row("userinfo in the target", "user@api.test:P", 400, Reason.INVALID_TARGET, null, false),
        row("percent-encoded target", "api%2etest:P", 400, Reason.INVALID_TARGET, null, false),
        row(
            "backslash in the target",
            "api.test\\\\evil.test:P",
            400,
            Reason.INVALID_TARGET,
            null,
            false),
        row(
            "64-character label",
            "a".repeat(64) + ".wild.test:P",
            400,
            Reason.INVALID_TARGET,
            null,
            false),
        row("target without port", "api.test", 400, Reason.INVALID_TARGET, null, false),
        row(
            "allowed name on refused loopback",
            "evil.test:P",
            403,
            Reason.NON_PUBLIC_ADDRESS,
            Fixture.REFUSED,
            true),
        row(
            "allowed name on metadata address",
            "metadata.test:P",
            403,
            Reason.NON_PUBLIC_ADDRESS,
            "169.254.169.254",
            true),
        row(
            "allowed name on mapped IPv6 loopback",
            "mapped.test:P",
            403,
            Reason.NON_PUBLIC_ADDRESS,
            "::ffff:7f00:3",
            true),
        row(
            "allowed name on the declared range, on a port the range does not list",
            "api.test:443",
            403,
            Reason.NON_PUBLIC_ADDRESS,
            Fixture.PERMITTED,
            true),
        row(
            "allowed name on RFC 1918",
            "private.test:P",
            403,
            Reason.NON_PUBLIC_ADDRESS,
            "10.0.0.1",
            true),
        row(
            "allowed name on IPv6 loopback",
            "six.test:P",
            403,
            Reason.NON_PUBLIC_ADDRESS,
            "::1",
            true),
        row(
            "allowed name that does not resolve",
            "ghost.test:P",
            403,
            Reason.DNS_FAILURE,
            null,
            true));
  }

  @ParameterizedTest(name = "{0}: CONNECT {1}")
  @MethodSource
  void connectRefusals(
      String name, String target, int status, Reason reason, String address, boolean looksUp)
      throws Exception {
    String authority = target.replace(":P", ":" + fixture.port);
    int lookupsBefore = resolver.lookups().size();
    int decisionsBefore = decisions.records().size();
    String response =
        Fixture.exchange(
            proxyAddress(),
            "CONNECT " + authority + " HTTP/1.1\r\nHost: api.test:" + fixture.port + "\r\n\r\n");
    assertThat(response).startsWith("HTTP/1.1 " + status);
    assertThat(response).contains("X-Agent-Sandbox-Denied: " + reason.wireName());
    assertThat(response).doesNotContain("<timed out");
    DecisionRecord record =
        decisions.awaitAfter(
            decisionsBefore,
            r ->
                r.method().equals("CONNECT")
                    && r.reason() == reason
                    && r.client() != null
                    && matchesHost(r, authority));
    assertThat(record.allowed()).isFalse();
    assertThat(record.address()).isEqualTo(address);
    List<String> lookups = resolver.lookups().subList(lookupsBefore, resolver.lookups().size());
    if (looksUp) {
      assertThat(lookups).containsExactly(record.host());
    } else {
      assertThat(lookups).isEmpty();
    }
    assertThat(fixture.trap.seen()).isEmpty();
  }

  private static boolean matchesHost(DecisionRecord record, String authority) {
    return authority.startsWith(record.host()) || authority.contains(record.host());
  }

  @Test
  void aNameWithRefusedAndPermittedAnswersIsDialledOnlyAtThePermittedOne() throws Exception {
    CurlResult result = curl("http://mixed.test:" + fixture.port + "/mixed");
    assertThat(result.output()).startsWith("HTTP/1.1 200").contains("hello from api");
    DecisionRecord record = decisions.await(r -> r.host().equals("mixed.test") && r.allowed());
    assertThat(record.address()).isEqualTo(Fixture.PERMITTED);
    assertThat(fixture.trap.seen()).isEmpty();
  }

  @Test
  void bytesPipelinedBehindARefusedConnectGoNowhere() throws Exception {
    String response =
        Fixture.exchange(
            proxyAddress(),
            "CONNECT not-allowed.test:"
                + fixture.port
                + " HTTP/1.1\r\nHost: api.test\r\n\r\n"
                + "GET http://api.test:"
                + fixture.port
                + "/smuggled HTTP/1.1\r\nHost: api.test\r\n\r\n");
    assertThat(response).startsWith("HTTP/1.1 403").doesNotContain("hello from api");
    assertThat(fixture.api.seen()).noneMatch(s -> s.path().equals("/smuggled"));
  }

  @Test
  void aConnectIsDecidedOnItsTargetNeverOnItsHostHeader() throws Exception {
    String response =
        Fixture.exchange(
            proxyAddress(),
            "CONNECT not-allowed.test:"
                + fixture.port
                + " HTTP/1.1\r\nHost: api.test:"
                + fixture.port
                + "\r\n\r\n");
    assertThat(response).startsWith("HTTP/1.1 403").contains("not-allowed.test");
  }

  static Stream<Arguments> plainHttpRefusals() {
    return Stream.of(
        Arguments.of(
            "origin-form request",
            "GET /f1 HTTP/1.1\r\nHost: api.test:P\r\n\r\n",
            400,
            Reason.BAD_REQUEST),
        Arguments.of(
            "https:// absolute form",
            "GET https://api.test:P/f2 HTTP/1.1\r\nHost: api.test\r\n\r\n",
            400,
            Reason.BAD_REQUEST),
        Arguments.of(
            "Content-Length with Transfer-Encoding",
            "POST http://api.test:P/f3 HTTP/1.1\r\nHost: api.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            400,
            Reason.BAD_REQUEST),
        Arguments.of(
            "signed Content-Length",
            "POST http://api.test:P/f4 HTTP/1.1\r\nHost: api.test\r\nContent-Length: +5\r\n\r\nhello",
            400,
            Reason.BAD_REQUEST),
        Arguments.of(
            "non-numeric Content-Length",
            "POST http://api.test:P/f5 HTTP/1.1\r\nHost: api.test\r\nContent-Length: five\r\n\r\nhello",
            400,
            Reason.BAD_REQUEST),
        Arguments.of(
            "conflicting Content-Length values",
            "POST http://api.test:P/f6 HTTP/1.1\r\nHost: api.test\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
            400,
            Reason.BAD_REQUEST),
        Arguments.of(
            "Transfer-Encoding other than chunked",
            "POST http://api.test:P/f7 HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
            400,
            Reason.BAD_REQUEST),
        Arguments.of(
            "malformed chunk size",
            "POST http://api.test:P/f8 HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
            400,
            Reason.BAD_REQUEST),
        Arguments.of(
            "WebSocket upgrade",
            "GET http://api.test:P/f9 HTTP/1.1\r\nHost: api.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
            403,
            Reason.UPGRADE_REFUSED),
        Arguments.of(
            "h2c upgrade",
            "GET http://api.test:P/f10 HTTP/1.1\r\nHost: api.test\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n",
            403,
            Reason.UPGRADE_REFUSED),
        Arguments.of(
            "userinfo in an absolute URL",
            "GET http://user:pw@api.test:P/f11 HTTP/1.1\r\nHost: api.test\r\n\r\n",
            400,
            Reason.INVALID_TARGET),
        Arguments.of(
            "IP literal in an absolute URL",
            "GET http://127.0.0.2:P/f12 HTTP/1.1\r\nHost: api.test\r\n\r\n",
            403,
            Reason.IP_LITERAL),
        Arguments.of(
            "header larger than the limit",
            "GET http://api.test:P/f13 HTTP/1.1\r\nHost: api.test\r\nX-Big: "
                + "a".repeat(20_000)
                + "\r\n\r\n",
            431,
            Reason.HEADER_TOO_LARGE));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource
  void plainHttpRefusals(String name, String request, int status, Reason reason) throws Exception {
    String response = Fixture.exchange(proxyAddress(), request.replace(":P", ":" + fixture.port));
    assertThat(response).startsWith("HTTP/1.1 " + status);
    assertThat(response).contains("X-Agent-Sandbox-Denied: " + reason.wireName());
    assertThat(response).doesNotContain("<timed out");
    String path = request.substring(request.indexOf("/f"), request.indexOf(" HTTP/1.1"));
    assertThat(fixture.api.seen()).noneMatch(s -> s.path().equals(path));
  }

  @Test
  void everyRequestOnAKeepAliveConnectionIsDecidedOnItsOwnAndGetsItsOwnUpstream() throws Exception {
    try (Socket socket = new Socket(proxyAddress().getAddress(), proxyAddress().getPort())) {
      socket.setSoTimeout(10_000);
      OutputStream out = socket.getOutputStream();
      InputStream in = socket.getInputStream();
      String base = "http://api.test:" + fixture.port;
      out.write(
          ("GET " + base + "/ka1 HTTP/1.1\r\nHost: api.test\r\n\r\n")
              .getBytes(StandardCharsets.US_ASCII));
      assertThat(Fixture.readResponse(in)).startsWith("HTTP/1.1 200").contains("hello from api");
      out.write(
          ("GET " + base + "/ka2 HTTP/1.1\r\nHost: api.test\r\n\r\n")
              .getBytes(StandardCharsets.US_ASCII));
      assertThat(Fixture.readResponse(in)).startsWith("HTTP/1.1 200").contains("hello from api");
      out.write(
          ("GET http://not-allowed.test:"
                  + fixture.port
                  + "/ka3 HTTP/1.1\r\nHost: api.test\r\n\r\n")
              .getBytes(StandardCharsets.US_ASCII));
      assertThat(Fixture.readAll(in)).startsWith("HTTP/1.1 403").contains("not-allowed");
    }
    Upstream.Seen first = seenAt(fixture.api, "/ka1");
    Upstream.Seen second = seenAt(fixture.api, "/ka2");
    assertThat(first.clientPort()).isNotEqualTo(second.clientPort());
    assertThat(first.header("Connection")).isEqualToIgnoringCase("close");
    assertThat(fixture.api.seen()).noneMatch(s -> s.path().equals("/ka3"));
  }

  @Test
  void pipelinedRequestsAreEachDecided() throws Exception {
    String base = "http://api.test:" + fixture.port;
    String response =
        Fixture.exchange(
            proxyAddress(),
            "GET "
                + base
                + "/pipe1 HTTP/1.1\r\nHost: api.test\r\n\r\n"
                + "GET http://not-allowed.test:"
                + fixture.port
                + "/pipe2 HTTP/1.1\r\nHost: api.test\r\n\r\n");
    assertThat(response)
        .startsWith("HTTP/1.1 200")
        .contains("hello from api")
        .contains("HTTP/1.1 403");
    assertThat(fixture.api.seen()).anyMatch(s -> s.path().equals("/pipe1"));
    assertThat(fixture.api.seen()).noneMatch(s -> s.path().equals("/pipe2"));
  }

  @Test
  void hopByHopAndConnectionNamedHeadersAreStripped() throws Exception {
    String response =
        Fixture.exchange(
            proxyAddress(),
            "POST http://api.test:"
                + fixture.port
                + "/hop HTTP/1.1\r\nHost: somewhere.else\r\n"
                + "Proxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\n"
                + "Keep-Alive: timeout=5\r\nTE: trailers\r\nConnection: close, X-Secret\r\n"
                + "X-Secret: do-not-forward\r\nX-Kept: yes\r\nContent-Length: 5\r\n\r\nhello");
    assertThat(response).startsWith("HTTP/1.1 200");
    Upstream.Seen seen = seenAt(fixture.api, "/hop");
    assertThat(seen.header("Host")).isEqualTo("api.test:" + fixture.port);
    assertThat(seen.header("X-Secret")).isNull();
    assertThat(seen.header("Proxy-Authorization")).isNull();
    assertThat(seen.header("Proxy-Connection")).isNull();
    assertThat(seen.header("Keep-Alive")).isNull();
    assertThat(seen.header("TE")).isNull();
    assertThat(seen.header("X-Kept")).isEqualTo("yes");
    assertThat(seen.body()).isEqualTo("hello");
  }

  @Test
  void aChunkedBodyIsForwardedIntact() throws Exception {
    String response =
        Fixture.exchange(
            proxyAddress(),
            "POST http://api.test:"
                + fixture.port
                + "/chunked HTTP/1.1\r\nHost: api.test\r\n"
                + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
    assertThat(response).startsWith("HTTP/1.1 200");
    assertThat(seenAt(fixture.api, "/chunked").body()).isEqualTo("hello world");
    DecisionRecord record =
        decisions.await(
            r -> r.host().equals("api.test") && r.method().equals("POST") && r.bytesUp() == 11);
    assertThat(record.allowed()).isTrue();
  }

  @Test
  void theFirstAllowPerHostIsMarkedAndLaterOnesAreNot() throws Exception {
    curl("http://a.b.wild.test:" + fixture.port + "/first");
    curl("http://a.b.wild.test:" + fixture.port + "/second");
    decisions.await(r -> r.host().equals("a.b.wild.test") && !r.first());
    List<DecisionRecord> wild =
        decisions.records().stream().filter(r -> r.host().equals("a.b.wild.test")).toList();
    assertThat(wild).hasSize(2);
    assertThat(wild).filteredOn(DecisionRecord::first).hasSize(1);
    assertThat(metrics.decisionCount("allow", "allowed")).isGreaterThanOrEqualTo(2);
  }

  private static Upstream.Seen seenAt(Upstream upstream, String path) {
    return await("upstream to see " + path)
        .atMost(Duration.ofSeconds(10))
        .pollInterval(Duration.ofMillis(20))
        .until(
            () -> upstream.seen().stream().filter(s -> s.path().equals(path)).findFirst(),
            Optional::isPresent)
        .orElseThrow();
  }

  private static Arguments row(
      String name, String target, int status, Reason reason, String address, boolean looksUp) {
    return Arguments.of(name, target, status, reason, address, looksUp);
  }
}
