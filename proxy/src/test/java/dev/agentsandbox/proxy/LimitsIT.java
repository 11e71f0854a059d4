package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.policy.event.DecisionRecord;
import dev.agentsandbox.policy.net.Reason;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Limits and the rules that need a proxy of their own: idle timeout, tunnel lifetime, maximum
 * connections, the proxy's own listening socket, the instance policy, and a real DNS lookup that
 * fails. Waits are bounded and nothing is timed.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class LimitsIT {
  private Fixture fixture;

  @BeforeAll
  void start() throws Exception {
    fixture = new Fixture();
  }

  @AfterAll
  void stop() {
    fixture.close();
  }

  private static Limits limits(Duration idle, Duration lifetime, int maxConnections) {
    Limits d = Limits.DEFAULTS;
    return new Limits(
        d.connectTimeout(),
        Duration.ofMillis(500),
        idle,
        lifetime,
        maxConnections,
        d.maxHeaderBytes(),
        1);
  }

  private Socket openTunnel(ProxyServer proxy) throws IOException {
    InetSocketAddress at = proxy.boundAddress();
    Socket socket = new Socket(at.getAddress(), at.getPort());
    socket.setSoTimeout(15_000);
    OutputStream out = socket.getOutputStream();
    out.write(
        ("CONNECT api.test:" + fixture.port + " HTTP/1.1\r\n\r\n")
            .getBytes(StandardCharsets.US_ASCII));
    assertThat(Fixture.readResponse(socket.getInputStream())).startsWith("HTTP/1.1 200");
    return socket;
  }

  @Test
  void anIdleTunnelIsClosedAndReportedSo() throws Exception {
    RecordingListener decisions = new RecordingListener();
    try (ProxyServer proxy =
        ProxyServer.start(
            fixture.config(limits(Duration.ofMillis(300), Duration.ofHours(1), 100)),
            new StaticHostResolver(fixture.hosts),
            List.of(decisions),
            new ProxyMetrics())) {
      try (Socket socket = openTunnel(proxy)) {
        assertThat(socket.getInputStream().read()).isEqualTo(-1);
      }
      DecisionRecord record = decisions.await(r -> r.method().equals("CONNECT"));
      assertThat(record.allowed()).isTrue();
      assertThat(record.end()).isEqualTo("idle-timeout");
    }
  }

  /**
   * The idle timeout counts bytes in either direction: a tunnel whose bytes all flow one way (a
   * download the client never answers, an upload the upstream never answers) is not idle while they
   * flow. Each side sends a byte every 100 ms for 2.5 s against a 1 s idle timeout.
   */
  @Test
  void aTunnelCarryingBytesOneWayOnlyIsNotIdle() throws Exception {
    for (boolean download : new boolean[] {true, false}) {
      RecordingListener decisions = new RecordingListener();
      try (java.net.ServerSocket raw =
              new java.net.ServerSocket(0, 4, java.net.InetAddress.getByName(Fixture.PERMITTED));
          ProxyServer proxy =
              ProxyServer.start(
                  fixture.config(
                      List.of("api.test:" + raw.getLocalPort()),
                      Optional.empty(),
                      "127.0.0.1",
                      0,
                      limits(Duration.ofSeconds(1), Duration.ofHours(1), 100)),
                  new StaticHostResolver(fixture.hosts),
                  List.of(decisions),
                  new ProxyMetrics())) {
        raw.setSoTimeout(15_000);
        InetSocketAddress at = proxy.boundAddress();
        try (Socket client = new Socket(at.getAddress(), at.getPort())) {
          client.setSoTimeout(15_000);
          client
              .getOutputStream()
              .write(
                  ("CONNECT api.test:" + raw.getLocalPort() + " HTTP/1.1\r\n\r\n")
                      .getBytes(StandardCharsets.US_ASCII));
          assertThat(Fixture.readResponse(client.getInputStream())).startsWith("HTTP/1.1 200");
          try (Socket upstream = raw.accept()) {
            upstream.setSoTimeout(15_000);
            if (download) {
              // Bytes up first: until the client's first bytes arrive the SNI guard holds the
              // tunnel, and it waits for them no longer than the idle timeout whatever comes down.
              // (at least a TLS record header's 5 bytes, to tell it this is no TLS).
              client.getOutputStream().write("hello".getBytes(StandardCharsets.US_ASCII));
              assertThat(upstream.getInputStream().readNBytes(5))
                  .isEqualTo("hello".getBytes(StandardCharsets.US_ASCII));
            }
            Socket sender = download ? upstream : client;
            Socket receiver = download ? client : upstream;
            for (int i = 0; i < 25; i++) {
              sender.getOutputStream().write('x');
              sender.getOutputStream().flush();
              Thread.sleep(100);
            }
            sender.shutdownOutput();
            // All 25 bytes arrive, then the end the sender chose, not the proxy's idle cut.
            assertThat(receiver.getInputStream().readAllBytes()).hasSize(25);
          }
        }
        DecisionRecord record = decisions.await(r -> r.method().equals("CONNECT"));
        assertThat(record.end()).as(download ? "download" : "upload").isNotEqualTo("idle-timeout");
      }
    }
  }

  @Test
  void aBusyTunnelIsStillClosedAtItsMaximumLifetime() throws Exception {
    RecordingListener decisions = new RecordingListener();
    try (ProxyServer proxy =
        ProxyServer.start(
            fixture.config(limits(Duration.ofMinutes(1), Duration.ofMillis(1500), 100)),
            new StaticHostResolver(fixture.hosts),
            List.of(decisions),
            new ProxyMetrics())) {
      try (Socket socket = openTunnel(proxy)) {
        OutputStream out = socket.getOutputStream();
        InputStream in = socket.getInputStream();
        // Keep the tunnel busy with keep-alive requests until the proxy cuts it, bounded by time
        // (well past the 1.5 s lifetime) rather than by a count a fast machine finishes early.
        boolean closed = false;
        long giveUp = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        for (int i = 0; i < 1_000_000 && !closed && System.nanoTime() < giveUp; i++) {
          try {
            out.write(
                "GET /busy HTTP/1.1\r\nHost: api.test\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            closed = Fixture.readResponse(in).isEmpty();
          } catch (IOException e) {
            closed = true;
          }
        }
        assertThat(closed).isTrue();
      }
      DecisionRecord record = decisions.await(r -> r.method().equals("CONNECT"));
      assertThat(record.end()).isEqualTo("lifetime-exceeded");
    }
  }

  @Test
  void connectionsBeyondTheMaximumAreRefused() throws Exception {
    RecordingListener decisions = new RecordingListener();
    try (ProxyServer proxy =
        ProxyServer.start(
            fixture.config(limits(Duration.ofMinutes(1), Duration.ofHours(1), 1)),
            new StaticHostResolver(fixture.hosts),
            List.of(decisions),
            new ProxyMetrics())) {
      try (Socket first = openTunnel(proxy)) {
        String second =
            Fixture.exchange(
                proxy.boundAddress(), "CONNECT api.test:" + fixture.port + " HTTP/1.1\r\n\r\n");
        assertThat(second)
            .startsWith("HTTP/1.1 503")
            .contains("X-Agent-Sandbox-Denied: too-many-connections");
        assertThat(first.isClosed()).isFalse();
      }
      assertThat(decisions.await(r -> r.reason() == Reason.TOO_MANY_CONNECTIONS).allowed())
          .isFalse();
    }
  }

  @Test
  void theProxysOwnListeningSocketIsNeverDialledEvenInsideADeclaredRange() throws Exception {
    int port = Fixture.freePort(Fixture.PERMITTED);
    RecordingListener decisions = new RecordingListener();
    List<String> allow = List.of("loop.test:" + port);
    fixture.hosts.put("loop.test", Fixture.addresses(Fixture.PERMITTED));
    try (ProxyServer proxy =
        ProxyServer.start(
            fixture.config(allow, Optional.empty(), Fixture.PERMITTED, port, Limits.DEFAULTS),
            new StaticHostResolver(fixture.hosts),
            List.of(decisions),
            new ProxyMetrics())) {
      String response =
          Fixture.exchange(proxy.boundAddress(), "CONNECT loop.test:" + port + " HTTP/1.1\r\n\r\n");
      assertThat(response)
          .startsWith("HTTP/1.1 403")
          .contains("non-public-address")
          .contains("proxy-listener");
    } finally {
      fixture.hosts.remove("loop.test");
    }
  }

  @Test
  void theInstancePolicyNarrowsTheSandboxListBeforeAnyLookup() throws Exception {
    RecordingResolver resolver = new RecordingResolver(new StaticHostResolver(fixture.hosts));
    try (ProxyServer proxy =
        ProxyServer.start(
            fixture.config(
                fixture.allow(),
                Optional.of(List.of("api.test:" + fixture.port)),
                "127.0.0.1",
                0,
                Limits.DEFAULTS),
            resolver,
            List.of(),
            new ProxyMetrics())) {
      String refused =
          Fixture.exchange(
              proxy.boundAddress(), "CONNECT mixed.test:" + fixture.port + " HTTP/1.1\r\n\r\n");
      assertThat(refused)
          .startsWith("HTTP/1.1 403")
          .contains("X-Agent-Sandbox-Denied: instance-policy");
      String allowed =
          Fixture.exchange(
              proxy.boundAddress(),
              "GET http://api.test:"
                  + fixture.port
                  + "/instance HTTP/1.1\r\nConnection: close\r\n\r\n");
      assertThat(allowed).startsWith("HTTP/1.1 200");
      assertThat(resolver.lookups()).containsExactly("api.test");
    }
  }

  @Test
  void aRealDnsLookupThatGetsNoAnswerIsReportedAsDnsFailure() throws Exception {
    int silent = Fixture.freePort("127.0.0.1");
    RecordingListener decisions = new RecordingListener();
    try (ProxyServer proxy =
        ProxyServer.start(
            fixture.config(limits(Duration.ofMinutes(1), Duration.ofHours(1), 10)),
            new DnsHostResolver(
                Duration.ofMillis(500), Optional.of(new InetSocketAddress("127.0.0.1", silent))),
            List.of(decisions),
            new ProxyMetrics())) {
      String response =
          Fixture.exchange(
              proxy.boundAddress(), "CONNECT api.test:" + fixture.port + " HTTP/1.1\r\n\r\n");
      assertThat(response)
          .startsWith("HTTP/1.1 403")
          .contains("X-Agent-Sandbox-Denied: dns-failure");
    }
    assertThat(decisions.await(r -> r.reason() == Reason.DNS_FAILURE).host()).isEqualTo("api.test");
  }
}
