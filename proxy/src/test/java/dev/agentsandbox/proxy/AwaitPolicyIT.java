package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.policy.net.Reason;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A proxy started awaiting its policy (a pooled proxy), with real clients on loopback: before the
 * policy every request of every kind is refused as {@code policy-pending}, no name is looked up and
 * neither the real upstream nor the trap sees a byte; after it, the policy decides; a connection
 * accepted before the policy is never decided by it; and a second policy is refused.
 */
class AwaitPolicyIT {
  private Fixture fixture;
  private RecordingResolver resolver;
  private RecordingListener decisions;
  private ProxyMetrics metrics;
  private ProxyServer proxy;

  @BeforeEach
  void start() throws Exception {
    fixture = new Fixture();
    resolver = new RecordingResolver(new StaticHostResolver(fixture.hosts));
    decisions = new RecordingListener();
    // The fixed part only: the fixture's allow-list in it must play no part before the policy.
    metrics = new ProxyMetrics();
    proxy =
        ProxyServer.startAwaitingPolicy(
            fixture.config(Limits.DEFAULTS), List.of(decisions), metrics);
  }

  @AfterEach
  void stop() {
    proxy.close();
    fixture.close();
  }

  private InetSocketAddress address() {
    return proxy.boundAddress();
  }

  private ProxyConfig policy() {
    return fixture.config(
        List.of("api.test:" + fixture.port, "evil.test:" + fixture.port),
        Optional.empty(),
        "127.0.0.1",
        0,
        Limits.DEFAULTS);
  }

  @Test
  void beforeItsPolicyTheProxyRefusesEverythingWithoutLookingUpOrDialling() throws Exception {
    String api = "api.test:" + fixture.port;
    List<String> answers = new ArrayList<>();
    answers.add(
        Fixture.exchange(address(), "CONNECT " + api + " HTTP/1.1\r\nHost: " + api + "\r\n\r\n"));
    answers.add(
        Fixture.exchange(
            address(), "GET http://" + api + "/pending HTTP/1.1\r\nHost: " + api + "\r\n\r\n"));
    answers.add(
        Fixture.exchange(
            address(), "CONNECT " + Fixture.REFUSED + ":" + fixture.port + " HTTP/1.1\r\n\r\n"));
    answers.add(
        Fixture.exchange(address(), "GET /origin-form HTTP/1.1\r\nHost: " + api + "\r\n\r\n"));
    answers.add(Fixture.exchange(address(), "\u0000\u0001garbage \r\n\r\n"));
    for (String answer : answers) {
      assertThat(answer)
          .startsWith("HTTP/1.1 403")
          .containsIgnoringCase("X-Agent-Sandbox-Denied: policy-pending");
    }
    try (HttpClient client = HttpClient.newBuilder().proxy(ProxySelector.of(address())).build()) {
      HttpResponse<String> response =
          client.send(
              HttpRequest.newBuilder(URI.create("http://" + api + "/pending-client"))
                  .timeout(Duration.ofSeconds(20))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(response.statusCode()).isEqualTo(403);
      assertThat(response.headers().firstValue("X-Agent-Sandbox-Denied"))
          .hasValue("policy-pending");
    }
    String tunnel = curl("-p", "http://" + api + "/pending-curl");
    assertThat(tunnel).contains("HTTP/1.1 403").containsIgnoringCase("policy-pending");

    Awaitility.await("seven decisions")
        .atMost(Duration.ofSeconds(10))
        .until(() -> decisions.records().size() >= 7);
    assertThat(decisions.records())
        .hasSize(7)
        .allSatisfy(
            r -> {
              assertThat(r.allowed()).isFalse();
              assertThat(r.reason()).isEqualTo(Reason.POLICY_PENDING);
              assertThat(r.address()).isNullOrEmpty();
            });
    assertThat(resolver.lookups()).isEmpty();
    assertThat(fixture.api.seen()).isEmpty();
    assertThat(fixture.trap.seen()).isEmpty();
    assertThat(proxy.awaitingPolicy()).isTrue();
  }

  @Test
  void oncePolicyArrivesItDecidesAndASecondPolicyIsRefused() throws Exception {
    assertThat(curl("http://api.test:" + fixture.port + "/before"))
        .startsWith("HTTP/1.1 403")
        .containsIgnoringCase("X-Agent-Sandbox-Denied: policy-pending");

    proxy.applyPolicy(policy(), resolver);
    assertThat(proxy.awaitingPolicy()).isFalse();

    assertThat(curl("http://api.test:" + fixture.port + "/after"))
        .startsWith("HTTP/1.1 200")
        .contains("hello from api");
    assertThat(curl("http://not-allowed.test:" + fixture.port + "/after"))
        .startsWith("HTTP/1.1 403")
        .containsIgnoringCase("X-Agent-Sandbox-Denied: not-allowed");
    assertThat(curl("http://evil.test:" + fixture.port + "/after"))
        .startsWith("HTTP/1.1 403")
        .containsIgnoringCase("X-Agent-Sandbox-Denied: non-public-address");
    assertThat(decisions.await(r -> r.allowed()).runId()).isEqualTo("run-test");

    // A second policy, however loose, is refused: the first stays in force.
    ProxyConfig looser =
        fixture.config(
            List.of("not-allowed.test:" + fixture.port),
            Optional.empty(),
            "127.0.0.1",
            0,
            Limits.DEFAULTS);
    assertThatThrownBy(() -> proxy.applyPolicy(looser, resolver))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("one run");
    assertThat(curl("http://not-allowed.test:" + fixture.port + "/second"))
        .startsWith("HTTP/1.1 403")
        .containsIgnoringCase("X-Agent-Sandbox-Denied: not-allowed");
    assertThat(fixture.api.seen()).extracting(Upstream.Seen::path).containsExactly("/after");
    assertThat(fixture.trap.seen()).isEmpty();
  }

  /**
   * The attacker's race: connections opened while the proxy awaits its policy, one with a whole
   * request already sent, one with half a head, one idle; then the policy arrives. None of them is
   * decided by the policy: each request is refused as pending, nothing dialled.
   */
  @Test
  void connectionsAcceptedBeforeThePolicyStayRefusedAfterIt() throws Exception {
    String api = "api.test:" + fixture.port;
    try (Socket queued = connect();
        Socket half = connect();
        Socket idle = connect()) {
      // All three accepted (each took its state as it was accepted, before counting itself).
      Awaitility.await("three accepted connections")
          .atMost(Duration.ofSeconds(10))
          .until(() -> metrics.openConnections() == 3);
      write(queued, "GET http://" + api + "/queued HTTP/1.1\r\nHost: " + api + "\r\n\r\n");
      write(half, "GET http://" + api + "/half HTTP/1.1\r\nHost: ");
      assertThat(Fixture.readAll(queued.getInputStream()))
          .containsIgnoringCase("X-Agent-Sandbox-Denied: policy-pending");

      proxy.applyPolicy(policy(), resolver);

      write(half, api + "\r\n\r\n");
      write(idle, "CONNECT " + api + " HTTP/1.1\r\nHost: " + api + "\r\n\r\n");
      write(idle, "GET http://" + api + "/idle HTTP/1.1\r\nHost: " + api + "\r\n\r\n");
      assertThat(Fixture.readAll(half.getInputStream()))
          .startsWith("HTTP/1.1 403")
          .containsIgnoringCase("X-Agent-Sandbox-Denied: policy-pending");
      assertThat(Fixture.readAll(idle.getInputStream()))
          .startsWith("HTTP/1.1 403")
          .containsIgnoringCase("X-Agent-Sandbox-Denied: policy-pending")
          .doesNotContain("200 Connection established");
    }
    // A connection opened after the policy is decided by it.
    assertThat(curl("http://" + api + "/new")).startsWith("HTTP/1.1 200");
    assertThat(fixture.api.seen()).extracting(Upstream.Seen::path).containsExactly("/new");
    assertThat(resolver.lookups()).containsExactly("api.test");
  }

  private Socket connect() throws Exception {
    Socket socket = new Socket(address().getAddress(), address().getPort());
    socket.setSoTimeout(10_000);
    return socket;
  }

  private static void write(Socket socket, String text) throws Exception {
    OutputStream out = socket.getOutputStream();
    out.write(text.getBytes(StandardCharsets.ISO_8859_1));
    out.flush();
  }

  private String curl(String... args) throws Exception {
    List<String> command =
        new ArrayList<>(
            List.of(
                Curl.path(),
                "-sS",
                "-i",
                "--max-time",
                "20",
                "-x",
                "http://127.0.0.1:" + address().getPort()));
    command.addAll(List.of(args));
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
    return output;
  }
}
