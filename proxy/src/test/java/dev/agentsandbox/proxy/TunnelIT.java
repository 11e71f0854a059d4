package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.policy.event.DecisionRecord;
import dev.agentsandbox.policy.net.Reason;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Tunnels: the TLS server-name check (domain fronting), the JDK HttpClient through the proxy for
 * plain HTTP and HTTPS, and a raw TLS client that tries to front one allowed name with another.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TunnelIT {
  private Fixture fixture;
  private RecordingListener decisions;
  private ProxyServer proxy;

  @BeforeAll
  void start() throws Exception {
    fixture = new Fixture();
    decisions = new RecordingListener();
    proxy =
        ProxyServer.start(
            fixture.config(Limits.DEFAULTS),
            new StaticHostResolver(fixture.hosts),
            List.of(decisions),
            new ProxyMetrics());
  }

  @AfterAll
  void stop() {
    proxy.close();
    fixture.close();
  }

  /** Opens a CONNECT tunnel and returns the socket positioned after the 200 answer. */
  private Socket tunnel(String target) throws IOException {
    InetSocketAddress at = proxy.boundAddress();
    Socket socket = new Socket(at.getAddress(), at.getPort());
    socket.setSoTimeout(10_000);
    OutputStream out = socket.getOutputStream();
    out.write(
        ("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n")
            .getBytes(StandardCharsets.US_ASCII));
    out.flush();
    String head = Fixture.readResponse(socket.getInputStream());
    assertThat(head).startsWith("HTTP/1.1 200");
    return socket;
  }

  private SSLSocket tls(Socket tunnel, String host, List<String> serverNames) throws Exception {
    SSLSocket ssl =
        (SSLSocket)
            fixture
                .certificate
                .clientContext()
                .getSocketFactory()
                .createSocket(tunnel, host, fixture.tls.port(), true);
    SSLParameters parameters = ssl.getSSLParameters();
    parameters.setServerNames(
        serverNames.stream().map(n -> (javax.net.ssl.SNIServerName) new SNIHostName(n)).toList());
    ssl.setSSLParameters(parameters);
    return ssl;
  }

  @Test
  void aClientHelloNamingTheTargetPassesAndReachesTheTlsUpstream() throws Exception {
    try (Socket tunnel = tunnel("tls.test:" + fixture.tls.port());
        SSLSocket ssl = tls(tunnel, "tls.test", List.of("tls.test"))) {
      ssl.getOutputStream()
          .write(
              "GET /sni-ok HTTP/1.1\r\nHost: tls.test\r\nConnection: close\r\n\r\n"
                  .getBytes(StandardCharsets.US_ASCII));
      assertThat(Fixture.readAll(ssl.getInputStream()))
          .startsWith("HTTP/1.1 200")
          .contains("hello from tls");
    }
  }

  @Test
  void aClientHelloNamingAnotherHostIsRefusedAsDomainFronting() throws Exception {
    int before = decisions.records().size();
    try (Socket tunnel = tunnel("front.test:" + fixture.tls.port());
        SSLSocket ssl = tls(tunnel, "tls.test", List.of("tls.test"))) {
      assertThatThrownBy(ssl::startHandshake).isInstanceOf(IOException.class);
    }
    DecisionRecord record = decisions.awaitAfter(before, r -> r.host().equals("front.test"));
    assertThat(record.allowed()).isFalse();
    assertThat(record.reason()).isEqualTo(Reason.SNI_MISMATCH);
    assertThat(fixture.tls.seen()).noneMatch(s -> s.path().equals("/fronted"));
  }

  @Test
  void aClientHelloWithoutServerNameIsRefused() throws Exception {
    int before = decisions.records().size();
    try (Socket tunnel = tunnel("tls.test:" + fixture.tls.port());
        SSLSocket ssl = tls(tunnel, "tls.test", List.of())) {
      assertThatThrownBy(ssl::startHandshake).isInstanceOf(IOException.class);
    }
    DecisionRecord record =
        decisions.awaitAfter(before, r -> r.host().equals("tls.test") && !r.allowed());
    assertThat(record.reason()).isEqualTo(Reason.SNI_MISSING);
  }

  /**
   * First bytes Netty's ClientHello reader refuses on its own (it closes the tunnel and throws):
   * they are refused with a decision, not ended as an error of an allowed tunnel. Both were found
   * by fuzzing (docs/reliability.md); here over real sockets.
   */
  @Test
  void aClientHelloOver64KiBIsRefusedWithItsDecision() throws Exception {
    // A handshake record whose ClientHello announces 0x7fffff bytes, far over the 64 KiB bound.
    refusedAsSniMissing(new byte[] {0x16, 0x03, 0x01, 0x00, 0x04, 0x01, 0x7f, (byte) 0xff, -1});
  }

  @Test
  void aFirstRecordThatIsNoTlsAtAllIsRefusedWithItsDecision() throws Exception {
    // An alert record with a version no TLS has.
    refusedAsSniMissing(new byte[] {0x15, (byte) 0xdb, 0x10, (byte) 0xc2, 0x50});
  }

  private void refusedAsSniMissing(byte[] firstBytes) throws Exception {
    int before = decisions.records().size();
    try (Socket tunnel = tunnel("tls.test:" + fixture.tls.port())) {
      tunnel.getOutputStream().write(firstBytes);
      tunnel.getOutputStream().flush();
      try {
        assertThat(tunnel.getInputStream().read()).as("the tunnel is closed").isEqualTo(-1);
      } catch (IOException reset) {
        // Closed with the client's bytes unread: a reset is a close too.
      }
    }
    DecisionRecord record =
        decisions.awaitAfter(before, r -> r.host().equals("tls.test") && !r.allowed());
    assertThat(record.reason()).isEqualTo(Reason.SNI_MISSING);
  }

  @Test
  void aTunnelToANamedPortMayCarryPlainBytes() throws Exception {
    try (Socket tunnel = tunnel("api.test:" + fixture.port)) {
      OutputStream out = tunnel.getOutputStream();
      out.write(
          "GET /plain-tunnel HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n"
              .getBytes(StandardCharsets.US_ASCII));
      InputStream in = tunnel.getInputStream();
      assertThat(Fixture.readAll(in)).startsWith("HTTP/1.1 200").contains("hello from api");
    }
  }

  @Test
  void aTunnelCarriesFarMoreThanTheSocketBuffersBothWays() throws Exception {
    // 32 MiB each way: far past every socket buffer and write-buffer mark, so the relay must
    // pause and resume reading many times. A relay that loses a resume stalls here.
    int total = 32 * 1024 * 1024;
    int bulkPort = Fixture.freePort(Fixture.PERMITTED);
    try (java.net.ServerSocket bulk =
            new java.net.ServerSocket(bulkPort, 1, InetAddress.getByName(Fixture.PERMITTED));
        ProxyServer own =
            ProxyServer.start(
                fixture.config(
                    List.of("api.test:" + bulkPort),
                    Optional.empty(),
                    "127.0.0.1",
                    0,
                    Limits.DEFAULTS),
                new StaticHostResolver(fixture.hosts),
                List.of(),
                new ProxyMetrics())) {
      java.util.concurrent.atomic.AtomicLong received =
          new java.util.concurrent.atomic.AtomicLong();
      Thread server =
          Thread.ofPlatform()
              .start(
                  () -> {
                    try (Socket peer = bulk.accept()) {
                      peer.setSoTimeout(30_000);
                      Thread reader =
                          Thread.ofPlatform().start(() -> received.set(drain(peer, total)));
                      write(peer.getOutputStream(), total);
                      reader.join(60_000);
                    } catch (IOException | InterruptedException e) {
                      throw new IllegalStateException(e);
                    }
                  });
      InetSocketAddress at = own.boundAddress();
      try (Socket socket = new Socket(at.getAddress(), at.getPort())) {
        socket.setSoTimeout(30_000);
        socket
            .getOutputStream()
            .write(
                ("CONNECT api.test:" + bulkPort + " HTTP/1.1\r\nHost: api.test\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
        assertThat(Fixture.readResponse(socket.getInputStream())).startsWith("HTTP/1.1 200");
        Thread uploader =
            Thread.ofPlatform()
                .start(
                    () -> {
                      try {
                        write(socket.getOutputStream(), total);
                      } catch (IOException e) {
                        throw new IllegalStateException(e);
                      }
                    });
        assertThat(drain(socket, total)).isEqualTo(total);
        uploader.join(60_000);
      }
      server.join(60_000);
      assertThat(received.get()).isEqualTo(total);
    }
  }

  private static void write(OutputStream out, int total) throws IOException {
    byte[] chunk = new byte[64 * 1024];
    for (int sent = 0; sent < total; sent += chunk.length) {
      out.write(chunk, 0, Math.min(chunk.length, total - sent));
    }
    out.flush();
  }

  /** Reads until {@code expected} bytes arrived, the stream ends or the socket times out. */
  private static long drain(Socket socket, int expected) {
    byte[] buffer = new byte[64 * 1024];
    long read = 0;
    try {
      InputStream in = socket.getInputStream();
      while (read < expected) {
        int n = in.read(buffer);
        if (n < 0) {
          break;
        }
        read += n;
      }
    } catch (IOException e) {
      // A stall ends in a read timeout; the count tells how far it got.
    }
    return read;
  }

  @Test
  void jdkHttpClientFetchesPlainHttpAndHttpsThroughTheProxy() throws Exception {
    HttpClient client =
        HttpClient.newBuilder()
            .proxy(ProxySelector.of(proxy.boundAddress()))
            .sslContext(fixture.certificate.clientContext())
            .connectTimeout(Duration.ofSeconds(10))
            .build();
    HttpResponse<String> plain =
        client.send(
            HttpRequest.newBuilder(URI.create("http://api.test:" + fixture.port + "/jdk"))
                .timeout(Duration.ofSeconds(20))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(plain.statusCode()).isEqualTo(200);
    assertThat(plain.body()).isEqualTo("hello from api");
    HttpResponse<String> secure =
        client.send(
            HttpRequest.newBuilder(
                    URI.create("https://tls.test:" + fixture.tls.port() + "/jdk-tls"))
                .timeout(Duration.ofSeconds(20))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(secure.statusCode()).isEqualTo(200);
    assertThat(secure.body()).isEqualTo("hello from tls");
    HttpResponse<String> refused =
        client.send(
            HttpRequest.newBuilder(URI.create("http://evil.test:" + fixture.port + "/jdk-evil"))
                .timeout(Duration.ofSeconds(20))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(refused.statusCode()).isEqualTo(403);
    assertThat(refused.headers().firstValue("X-Agent-Sandbox-Denied"))
        .hasValue("non-public-address");
    assertThat(fixture.trap.seen()).isEmpty();
    client.close();
  }
}
