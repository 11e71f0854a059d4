package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.net.AddressPolicy;
import dev.agentsandbox.policy.net.EgressDecider;
import dev.agentsandbox.policy.net.InternalRanges;
import dev.agentsandbox.policy.net.Reason;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelPromise;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpResponseEncoder;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The plain-HTTP forwarder's states, step by step: the client and each upstream are Netty's
 * in-memory channels carrying the real pipelines (decoder, encoder, client handler; the upstream
 * codec), so every state can be observed between two messages. Covers the whole path of a
 * keep-alive exchange, an early answer, and refusals and early errors on a connection that already
 * served a request. Back-pressure over real sockets is {@code HttpForwardIT}'s job.
 */
class HttpForwarderStateTest {
  private final RecordingListener decisions = new RecordingListener();
  private final List<EmbeddedChannel> upstreams = new ArrayList<>();
  private final List<ChannelPromise> connecting = new ArrayList<>();
  private final ProxyContext context =
      new ProxyContext(
          new EgressDecider(AllowList.parse(List.of("api.test", "evil.test")), Optional.empty()),
          new AddressPolicy(
              InternalRanges.parse(List.of("10.20.0.0/16:80")),
              Set.of(),
              new InetSocketAddress("127.0.0.1", 3128)),
          new StaticHostResolver(
              Map.of(
                  "api.test", Fixture.addresses("10.20.1.2"),
                  "evil.test", Fixture.addresses("127.0.0.1"))),
          new DecisionLog(List.of(decisions), new ProxyMetrics()),
          new ProxyMetrics(),
          Limits.DEFAULTS,
          "run",
          new AtomicInteger(),
          (client, checked, handler, limits) -> {
            // Connected only when the test says so, to observe the CONNECTING states.
            EmbeddedChannel upstream = new EmbeddedChannel(handler);
            upstreams.add(upstream);
            ChannelPromise promise = upstream.newPromise();
            connecting.add(promise);
            return promise;
          });
  private final EmbeddedChannel client = new EmbeddedChannel();
  private final ClientHandler clientHandler = new ClientHandler(context);

  HttpForwarderStateTest() {
    client
        .pipeline()
        .addLast(ProxyServer.DECODER, new StrictRequestDecoder(Limits.DEFAULTS.maxHeaderBytes()))
        .addLast(ProxyServer.ENCODER, new HttpResponseEncoder())
        .addLast(ProxyServer.CLIENT_HANDLER, clientHandler);
  }

  @AfterEach
  void close() {
    client.finishAndReleaseAll();
    upstreams.forEach(EmbeddedChannel::finishAndReleaseAll);
  }

  private void fromClient(String text) {
    client.writeInbound(Unpooled.copiedBuffer(text, StandardCharsets.ISO_8859_1));
  }

  private void fromUpstream(int index, String text) {
    upstreams.get(index).writeInbound(Unpooled.copiedBuffer(text, StandardCharsets.ISO_8859_1));
  }

  private void connect(int index) {
    connecting.get(index).setSuccess();
  }

  private ForwardState state() {
    HttpForwarder forwarder = handler().forwarder();
    return forwarder == null ? null : forwarder.state();
  }

  /** The client's handler, also after a close took it out of the pipeline. */
  private ClientHandler handler() {
    return clientHandler;
  }

  private static String drain(EmbeddedChannel channel) {
    StringBuilder text = new StringBuilder();
    for (Object out; (out = channel.readOutbound()) != null; ) {
      ByteBuf bytes = (ByteBuf) out;
      text.append(bytes.toString(StandardCharsets.ISO_8859_1));
      bytes.release();
    }
    return text.toString();
  }

  /** A whole keep-alive GET, so the next step runs on a connection that already served one. */
  private void serveOneGet() {
    fromClient("GET http://api.test/one HTTP/1.1\r\nHost: api.test\r\n\r\n");
    int index = upstreams.size() - 1;
    connect(index);
    fromUpstream(index, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none");
    assertThat(drain(client)).startsWith("HTTP/1.1 200 OK").endsWith("one");
    assertThat(state()).isNull();
    assertThat(client.isOpen()).isTrue();
  }

  @Test
  void aKeepAliveGetPassesEveryStateAndLeavesTheConnectionReadingForTheNext() {
    fromClient("GET http://api.test/a HTTP/1.1\r\nHost: api.test\r\n\r\n");
    assertThat(state()).isEqualTo(ForwardState.CONNECTING_REQUEST_READ);
    assertThat(client.config().isAutoRead()).isFalse();

    connect(0);
    assertThat(state()).isEqualTo(ForwardState.AWAITING_RESPONSE);
    assertThat(drain(upstreams.get(0)))
        .startsWith("GET /a HTTP/1.1\r\n")
        .contains("host: api.test\r\n")
        .contains("connection: close\r\n");

    fromUpstream(0, "HTTP/1.1 100 Continue\r\n\r\n");
    assertThat(state()).isEqualTo(ForwardState.AWAITING_RESPONSE);
    fromUpstream(0, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nhe");
    assertThat(state()).isEqualTo(ForwardState.RECEIVING);
    fromUpstream(0, "ll");
    assertThat(state()).isNull();
    assertThat(drain(client))
        .startsWith("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n")
        .endsWith("hell");
    assertThat(client.config().isAutoRead()).isTrue();
    assertThat(upstreams.get(0).isOpen()).isFalse();
    assertThat(decisions.records())
        .singleElement()
        .satisfies(r -> assertThat(r.end()).isEqualTo("complete"));

    fromClient("GET http://api.test/b HTTP/1.1\r\nHost: api.test\r\n\r\n");
    assertThat(state()).isEqualTo(ForwardState.CONNECTING_REQUEST_READ);
    assertThat(upstreams).hasSize(2);
  }

  @Test
  void aBodyStreamsUpWhileAnEarlyAnswerStreamsDownAndTheConnectionStaysOpen() {
    fromClient(
        "POST http://api.test/up HTTP/1.1\r\nHost: api.test\r\nContent-Length: 10\r\n\r\n01234");
    assertThat(state()).isEqualTo(ForwardState.CONNECTING);

    connect(0);
    assertThat(state()).isEqualTo(ForwardState.SENDING);
    assertThat(client.config().isAutoRead()).isTrue();
    assertThat(drain(upstreams.get(0))).startsWith("POST /up HTTP/1.1\r\n").endsWith("01234");

    fromUpstream(0, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nea");
    assertThat(state()).isEqualTo(ForwardState.SENDING_AND_RECEIVING);

    fromClient("56789");
    assertThat(state()).isEqualTo(ForwardState.RECEIVING);
    assertThat(client.config().isAutoRead()).isFalse();
    assertThat(drain(upstreams.get(0))).isEqualTo("56789");

    fromUpstream(0, "rl");
    assertThat(state()).isNull();
    assertThat(drain(client)).endsWith("earl");
    assertThat(client.isOpen()).isTrue();
  }

  @Test
  void anAnswerThatEndsBeforeTheRequestBodyClosesTheConnection() {
    fromClient(
        "POST http://api.test/up HTTP/1.1\r\nHost: api.test\r\nContent-Length: 10\r\n\r\n012");
    connect(0);
    fromUpstream(0, "HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\n\r\n");
    // The head went out while the body might still have completed; the close ends the connection.
    assertThat(drain(client)).startsWith("HTTP/1.1 413 Content Too Large\r\n");
    assertThat(handler().forwarder().state()).isEqualTo(ForwardState.DONE);
    assertThat(client.isOpen()).isFalse();
    assertThat(upstreams.get(0).isOpen()).isFalse();
  }

  @Test
  void aRefusalOnAKeepAliveConnectionEndsItWithoutDialling() {
    serveOneGet();
    fromClient("GET http://other.test/ HTTP/1.1\r\nHost: other.test\r\n\r\n");
    assertThat(handler().forwarder().state()).isEqualTo(ForwardState.DONE);
    assertThat(drain(client)).startsWith("HTTP/1.1 403").contains("not-allowed");
    assertThat(client.isOpen()).isFalse();
    assertThat(upstreams).hasSize(1);
    assertThat(decisions.records())
        .last()
        .satisfies(r -> assertThat(r.reason()).isEqualTo(Reason.NOT_ALLOWED));
  }

  @Test
  void aRefusedAddressOnAKeepAliveConnectionEndsItAfterTheLookup() {
    serveOneGet();
    fromClient("GET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n");
    assertThat(handler().forwarder().state()).isEqualTo(ForwardState.DONE);
    assertThat(drain(client)).startsWith("HTTP/1.1 403").contains("non-public-address");
    assertThat(client.isOpen()).isFalse();
    assertThat(upstreams).hasSize(1);
  }

  @Test
  void aMalformedChunkOnAKeepAliveConnectionIsRefusedAndClosesTheUpstream() {
    serveOneGet();
    fromClient(
        "POST http://api.test/c HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "3\r\nabc\r\n");
    connect(1);
    assertThat(state()).isEqualTo(ForwardState.SENDING);
    fromClient("zz\r\n");
    assertThat(handler().forwarder().state()).isEqualTo(ForwardState.DONE);
    assertThat(drain(client)).contains("HTTP/1.1 400").contains("bad-request");
    assertThat(client.isOpen()).isFalse();
    assertThat(upstreams.get(1).isOpen()).isFalse();
  }

  @Test
  void anUpstreamThatClosesBeforeAnsweringGets502OnAKeepAliveConnection() {
    serveOneGet();
    fromClient("GET http://api.test/gone HTTP/1.1\r\nHost: api.test\r\n\r\n");
    connect(1);
    assertThat(state()).isEqualTo(ForwardState.AWAITING_RESPONSE);
    upstreams.get(1).close();
    assertThat(handler().forwarder().state()).isEqualTo(ForwardState.DONE);
    assertThat(drain(client)).contains("HTTP/1.1 502");
    assertThat(client.isOpen()).isFalse();
    assertThat(decisions.records())
        .last()
        .satisfies(r -> assertThat(r.end()).isEqualTo("upstream-closed"));
  }

  @Test
  void aClientThatLeavesWhileDiallingClosesTheLateUpstream() {
    fromClient("GET http://api.test/late HTTP/1.1\r\nHost: api.test\r\n\r\n");
    HttpForwarder forwarder = handler().forwarder();
    client.close();
    assertThat(forwarder.state()).isEqualTo(ForwardState.DONE);
    connect(0);
    assertThat(upstreams.get(0).isOpen()).isFalse();
    assertThat(forwarder.state()).isEqualTo(ForwardState.DONE);
  }

  @Test
  void theTableReachesDoneFromEveryStateAndNothingLeavesDone() {
    for (ForwardState state : ForwardState.values()) {
      if (state != ForwardState.DONE) {
        assertThat(state.successors()).as("%s may end", state).contains(ForwardState.DONE);
      }
      assertThat(state.successors()).as("%s does not loop", state).doesNotContain(state);
    }
    assertThat(ForwardState.DONE.successors()).isEmpty();
    // Every state but the first is entered from somewhere.
    EnumSet<ForwardState> entered = EnumSet.noneOf(ForwardState.class);
    for (ForwardState state : ForwardState.values()) {
      entered.addAll(state.successors());
    }
    assertThat(entered).isEqualTo(EnumSet.complementOf(EnumSet.of(ForwardState.DECIDING)));
  }
}
