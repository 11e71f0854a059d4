package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.agentsandbox.policy.AllowEntry;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.net.AddressPolicy;
import dev.agentsandbox.policy.net.EgressDecider;
import dev.agentsandbox.policy.net.InternalRanges;
import dev.agentsandbox.policy.net.IpLiteral;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelPromise;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpRequestDecoder;
import io.netty.handler.codec.http.HttpResponseEncoder;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Coverage-guided fuzzing of the proxy's own request-head and CONNECT handling (Jazzer), in memory:
 * the client connection is Netty's in-memory channel carrying the proxy's real pipeline (the strict
 * request decoder, the response encoder, the client handler), and every dial goes to an in-memory
 * upstream recorded by the test, so each input runs without sockets or threads. Netty's decoder
 * splits the bytes into heads; what is fuzzed is ours: the absolute-form and CONNECT target
 * parsing, the framing checks, the decision, the dial, and the head rebuilt for the upstream.
 * Properties, for any bytes:
 *
 * <ul>
 *   <li>every dial goes to the one permitted address, on a port the allow-list grants the decided
 *       host, and the resolver is asked only for names the allow-list covers;
 *   <li>every head forwarded upstream decodes as one well-formed origin-form request with exactly
 *       one {@code Host} header naming the decided host, {@code Connection: close}, no proxy or
 *       upgrade header, and never both {@code Content-Length} and {@code Transfer-Encoding}.
 * </ul>
 *
 * The end-to-end form over real sockets is {@link ProxyFuzzTest#noRequestReachesARefusedHost}.
 * Without {@code JAZZER_FUZZ} this runs as a regression test over the inputs kept under {@code
 * src/test/resources/dev/agentsandbox/proxy/RequestHeadFuzzTestInputs/<method>/} (seeds and every
 * crash found); scripts/fuzz.sh fuzzes it for a bounded time.
 */
class RequestHeadFuzzTest {
  /**
   * How long the target fuzzes when {@code JAZZER_FUZZ} is set and scripts/fuzz.sh gives no shorter
   * bound (a constant: Error Prone 2.45 crashes on a string literal in this annotation).
   */
  static final String FUZZ_TIME = "30s";

  private static final String PERMITTED = "127.0.0.2";
  private static final List<String> ALLOW =
      List.of("api.test", "api.test:8080", "*.wild.test", "evil.test:8080", "private.test");
  private static final List<AllowEntry> ALLOWED = AllowList.parse(ALLOW).entries();

  /**
   * One dial the proxy made: where to, and whether it was for a forwarded request (not a tunnel).
   */
  private record Dial(InetSocketAddress address, boolean forwarded, EmbeddedChannel upstream) {}

  @FuzzTest(maxDuration = FUZZ_TIME)
  void aForwardedHeadIsDecidedAndClean(byte[] bytes) {
    List<Dial> dials = new ArrayList<>();
    List<ChannelPromise> connecting = new ArrayList<>();
    RecordingResolver resolver =
        new RecordingResolver(
            new StaticHostResolver(
                Map.of(
                    "api.test", Fixture.addresses(PERMITTED),
                    "a.b.wild.test", Fixture.addresses(PERMITTED),
                    "evil.test", Fixture.addresses("127.0.0.3"),
                    "private.test", Fixture.addresses("10.0.0.1"),
                    "not-allowed.test", Fixture.addresses(PERMITTED))));
    ProxyContext context =
        new ProxyContext(
            new EgressDecider(AllowList.parse(ALLOW), Optional.empty()),
            new AddressPolicy(
                InternalRanges.parse(List.of(PERMITTED + "/32:80,443,8080")),
                Set.of(),
                new InetSocketAddress("127.0.0.1", 3128)),
            resolver,
            new DecisionLog(List.of(new RecordingListener()), new ProxyMetrics()),
            new ProxyMetrics(),
            Limits.DEFAULTS,
            "fuzz",
            new AtomicInteger(),
            (client, checked, handler, limits) -> {
              EmbeddedChannel upstream = new EmbeddedChannel(handler);
              dials.add(
                  new Dial(checked, handler instanceof HttpForwarder.UpstreamHandler, upstream));
              ChannelPromise promise = upstream.newPromise();
              connecting.add(promise);
              return promise;
            });
    EmbeddedChannel client = new EmbeddedChannel();
    client
        .pipeline()
        .addLast(ProxyServer.DECODER, new StrictRequestDecoder(Limits.DEFAULTS.maxHeaderBytes()))
        .addLast(ProxyServer.ENCODER, new HttpResponseEncoder())
        .addLast(ProxyServer.CLIENT_HANDLER, new ClientHandler(context));
    try {
      client.writeInbound(Unpooled.wrappedBuffer(bytes));
      // Each dial connects at once; a pipelined request behind it then gets its turn.
      for (int i = 0; i < connecting.size() && i < 64; i++) {
        connecting.get(i).trySuccess();
        client.runPendingTasks();
      }
      for (String name : resolver.lookups()) {
        assertThat(ALLOWED.stream().anyMatch(entry -> entry.matchesHost(name)))
            .as("the resolver was asked for %s, which no allow-list entry covers", name)
            .isTrue();
      }
      for (Dial dial : dials) {
        assertThat(IpLiteral.format(dial.address().getAddress()))
            .as("address dialled")
            .isEqualTo(PERMITTED);
        if (dial.forwarded()) {
          checkForwardedHead(dial);
        }
      }
    } finally {
      client.finishAndReleaseAll();
      dials.forEach(dial -> dial.upstream().finishAndReleaseAll());
    }
  }

  /** The head the proxy wrote upstream, decoded by a strict decoder of its own. */
  private static void checkForwardedHead(Dial dial) {
    EmbeddedChannel reader = new EmbeddedChannel(new HttpRequestDecoder());
    try {
      for (Object out; (out = dial.upstream().readOutbound()) != null; ) {
        reader.writeInbound((ByteBuf) out);
      }
      Object first = reader.readInbound();
      if (first == null) {
        return; // nothing written yet (the request is still waiting for its body)
      }
      try {
        assertThat(first).as("what went upstream").isInstanceOf(HttpRequest.class);
        HttpRequest head = (HttpRequest) first;
        assertThat(head.decoderResult().isSuccess())
            .as("the forwarded head decodes: %s", head.decoderResult())
            .isTrue();
        assertThat(head.uri()).as("forwarded request target").startsWith("/");
        List<String> hosts = head.headers().getAll(HttpHeaderNames.HOST);
        assertThat(hosts).as("Host headers").hasSize(1);
        String host = hosts.get(0);
        int port = dial.address().getPort();
        String suffix = port == 80 ? "" : ":" + port;
        assertThat(host).as("Host header names the dialled port %s", port).endsWith(suffix);
        String name = host.substring(0, host.length() - suffix.length());
        assertThat(ALLOWED.stream().anyMatch(entry -> entry.matches(name, port)))
            .as("the forwarded Host %s names a host the allow-list grants port %s", host, port)
            .isTrue();
        assertThat(head.headers().getAll(HttpHeaderNames.CONNECTION)).containsExactly("close");
        assertThat(head.headers().names())
            .as("headers forwarded upstream")
            .noneMatch(
                header ->
                    List.of(
                            "proxy-authorization",
                            "proxy-connection",
                            "upgrade",
                            "http2-settings",
                            "keep-alive",
                            "te")
                        .contains(header.toLowerCase(java.util.Locale.ROOT)));
        assertThat(
                head.headers().contains(HttpHeaderNames.CONTENT_LENGTH)
                    && head.headers().contains(HttpHeaderNames.TRANSFER_ENCODING))
            .as("both Content-Length and Transfer-Encoding forwarded")
            .isFalse();
      } finally {
        ReferenceCountUtil.release(first);
      }
    } finally {
      reader.finishAndReleaseAll();
    }
  }
}
