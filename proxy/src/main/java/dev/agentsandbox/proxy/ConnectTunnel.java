package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.net.Decision;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelPipeline;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * One {@code CONNECT} request: decided on its request-target alone (never on a Host header),
 * resolved and dialled only when allowed, then turned into a byte tunnel. Bytes the client sent
 * behind the CONNECT head are held (up to a bound) and go upstream only once the tunnel is up;
 * after a refusal they are dropped with the connection.
 */
final class ConnectTunnel {
  /** Bytes a client may send ahead of the tunnel being established (a ClientHello fits). */
  private static final int MAX_EARLY_BYTES = 64 * 1024;

  private static final byte[] ESTABLISHED =
      "HTTP/1.1 200 Connection established\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

  private final ProxyContext context;
  private final Channel client;
  private final Attempt attempt;
  private final Flow reading;
  private CompositeByteBuf early;
  private boolean established;

  /** {@code reading} is the client's flow, paused by the caller when the CONNECT head arrived. */
  ConnectTunnel(ProxyContext context, Channel client, Attempt attempt, Flow reading) {
    this.context = context;
    this.client = client;
    this.attempt = attempt;
    this.reading = reading;
  }

  void start(String requestTarget) {
    // From here on the client's bytes are tunnel bytes, not HTTP: stop parsing them.
    client.pipeline().remove(ProxyServer.DECODER);
    Decision decision = context.egress().decideAuthority(requestTarget);
    attempt.target(decision.host(), decision.port());
    if (!decision.allowed()) {
      Refusals.refuse(client, attempt, decision.reason(), decision.detail());
      return;
    }
    java.util.Optional<Inspection.Route> route = context.inspected(decision.host());
    if (route.isPresent()) {
      // Only an entry that asked for it is terminated; every other host stays an opaque tunnel.
      new InspectedTunnel(context, client, attempt, reading, route.get(), this::takeEarly).start();
      return;
    }
    Dialer.dial(context, client, attempt, new PlaceholderHandler(), this::connected, () -> {});
  }

  /** The bytes held so far (or null), handed over once; nothing is held after. */
  private ByteBuf takeEarly() {
    established = true;
    CompositeByteBuf held = early;
    early = null;
    return held;
  }

  /** Bytes (or leftovers of the HTTP decoder) that arrived before the tunnel is up. */
  void early(Object msg) {
    if (established || !(msg instanceof ByteBuf bytes) || !bytes.isReadable()) {
      ReferenceCountUtil.release(msg);
      return;
    }
    if (early == null) {
      early = client.alloc().compositeBuffer();
    }
    if (early.readableBytes() + bytes.readableBytes() > MAX_EARLY_BYTES) {
      bytes.release();
      client.close();
      return;
    }
    early.addComponent(true, bytes);
  }

  void clientClosed() {
    if (early != null) {
      early.release();
      early = null;
    }
  }

  private void connected(Channel upstream) {
    if (!client.isActive()) {
      upstream.close();
      attempt.endedBy("client-closed");
      attempt.allowEnded();
      return;
    }
    established = true;
    context.metrics().tunnelOpened();
    ScheduledFuture<?> lifetime =
        client
            .eventLoop()
            .schedule(
                () -> {
                  attempt.endedBy("lifetime-exceeded");
                  client.close();
                  upstream.close();
                },
                context.limits().maxLifetime().toMillis(),
                TimeUnit.MILLISECONDS);
    boolean[] finished = {false};
    Runnable finish =
        () -> {
          if (!finished[0] && !client.isOpen() && !upstream.isOpen()) {
            finished[0] = true;
            lifetime.cancel(false);
            context.metrics().tunnelClosed();
            attempt.allowEnded();
          }
        };
    client.closeFuture().addListener(f -> finish.run());
    upstream.closeFuture().addListener(f -> finish.run());
    upstream.closeFuture().addListener(f -> client.close());

    ChannelPipeline pipeline = client.pipeline();
    pipeline.remove(ProxyServer.ENCODER);
    client.writeAndFlush(Unpooled.wrappedBuffer(ESTABLISHED));
    pipeline.remove(ProxyServer.CLIENT_HANDLER);
    reading.feed(upstream);
    Flow down = new Flow(upstream, client);
    upstream
        .pipeline()
        .replace(
            PlaceholderHandler.class, "relay", new RelayHandler(down, reading, attempt, false));
    boolean requireTls = attempt.port() == 443;
    long guardTimeout =
        requireTls
            ? Math.min(10_000, context.limits().idleTimeout().toMillis())
            : context.limits().idleTimeout().toMillis();
    pipeline.addLast("sni", new SniGuard(upstream, attempt, requireTls, guardTimeout));
    pipeline.addLast("relay", new RelayHandler(reading, down, attempt, true));
    if (early != null) {
      CompositeByteBuf held = early;
      early = null;
      pipeline.fireChannelRead(held);
      pipeline.fireChannelReadComplete();
    }
    down.want(true);
    reading.want(true);
  }

  /** Sits in the upstream pipeline until the relay replaces it; reads are off until then. */
  static final class PlaceholderHandler extends io.netty.channel.ChannelInboundHandlerAdapter {}
}
