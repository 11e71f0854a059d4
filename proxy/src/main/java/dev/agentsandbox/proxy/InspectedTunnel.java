package dev.agentsandbox.proxy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.HttpResponseEncoder;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.codec.http2.Http2StreamFrameToHttpObjectCodec;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.ApplicationProtocolNegotiationHandler;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.concurrent.ScheduledFuture;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * A {@code CONNECT} to an inspected host, once allowed: the proxy dials the checked address, makes
 * its own TLS connection to the host (verified: {@link UpstreamTls}) and only then answers {@code
 * 200} — an upstream whose certificate does not verify is refused like any other target, with its
 * reason. Then it terminates the client's TLS itself, after the same SNI check as an opaque tunnel,
 * with the run CA's certificate for exactly this host, speaks HTTP/2 or HTTP/1.1 as ALPN chose, and
 * serves every request of the tunnel as an {@link InspectedExchange} over its {@link UpstreamPool}.
 * The tunnel's own decision is reported when it ends, after its requests'.
 */
final class InspectedTunnel {
  private static final byte[] ESTABLISHED =
      "HTTP/1.1 200 Connection established\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

  private final ProxyContext context;
  private final Channel client;
  private final Attempt attempt;
  private final Flow reading;
  private final Inspection.Route route;
  private final Supplier<ByteBuf> early;
  private UpstreamPool pool;

  /**
   * {@code reading} is the client's flow, paused when the CONNECT head arrived; {@code early} hands
   * over the bytes the client sent behind it (or null), once.
   */
  InspectedTunnel(
      ProxyContext context,
      Channel client,
      Attempt attempt,
      Flow reading,
      Inspection.Route route,
      Supplier<ByteBuf> early) {
    this.context = context;
    this.client = client;
    this.attempt = attempt;
    this.reading = reading;
    this.route = route;
    this.early = early;
  }

  Inspection.Route route() {
    return route;
  }

  int port() {
    return attempt.port();
  }

  UpstreamPool pool() {
    return pool;
  }

  Attempt attempt() {
    return attempt;
  }

  ProxyContext context() {
    return context;
  }

  void start() {
    Dialer.dial(
        context,
        client,
        attempt,
        new ConnectTunnel.PlaceholderHandler(),
        this::connected,
        () -> {});
  }

  private void connected(Channel upstream) {
    if (!client.isActive()) {
      upstream.close();
      attempt.endedBy("client-closed");
      attempt.allowEnded();
      return;
    }
    // Every later connection of this tunnel goes to exactly this address: it is never resolved
    // again.
    InetSocketAddress pinned = (InetSocketAddress) upstream.remoteAddress();
    pool = new UpstreamPool(context, client, route.host(), attempt.port(), pinned);
    pool.handshake(
        upstream,
        () -> established(upstream),
        (reason, detail) -> Refusals.refuse(client, attempt, reason, detail));
  }

  private void established(Channel first) {
    if (!client.isActive()) {
      pool.close();
      attempt.endedBy("client-closed");
      attempt.allowEnded();
      return;
    }
    context.metrics().tunnelOpened();
    ScheduledFuture<?> lifetime =
        client
            .eventLoop()
            .schedule(
                () -> {
                  attempt.endedBy("lifetime-exceeded");
                  client.close();
                },
                context.limits().maxLifetime().toMillis(),
                TimeUnit.MILLISECONDS);
    client
        .closeFuture()
        .addListener(
            f -> {
              lifetime.cancel(false);
              pool.close();
              context.metrics().tunnelClosed();
              attempt.allowEnded();
            });
    ChannelPipeline pipeline = client.pipeline();
    pipeline.remove(ProxyServer.ENCODER);
    client.writeAndFlush(Unpooled.wrappedBuffer(ESTABLISHED));
    pipeline.remove(ProxyServer.CLIENT_HANDLER);
    long guardTimeout = Math.min(10_000, context.limits().idleTimeout().toMillis());
    // The same check as an opaque tunnel's: the ClientHello must name this host.
    pipeline.addLast("sni", new SniGuard(first, attempt, true, guardTimeout));
    pipeline.addLast("tls", route.facing().newHandler(client.alloc()));
    pipeline.addLast("alpn", new Negotiation());
    pipeline.addLast("inspected-tunnel", new TunnelEnd());
    ByteBuf held = early.get();
    if (held != null) {
      pipeline.fireChannelRead(held);
      pipeline.fireChannelReadComplete();
    }
    reading.want(true);
  }

  /** Chooses HTTP/2 or HTTP/1.1 by what ALPN agreed on (HTTP/1.1 when the client offered none). */
  private final class Negotiation extends ApplicationProtocolNegotiationHandler {
    Negotiation() {
      super(ApplicationProtocolNames.HTTP_1_1);
    }

    @Override
    protected void configurePipeline(ChannelHandlerContext ctx, String protocol) {
      ChannelPipeline pipeline = ctx.pipeline();
      if (ApplicationProtocolNames.HTTP_2.equals(protocol)) {
        pipeline.addBefore(
            "inspected-tunnel",
            "h2",
            Http2FrameCodecBuilder.forServer()
                .initialSettings(
                    Http2Settings.defaultSettings()
                        .maxConcurrentStreams(UpstreamPool.MAX)
                        .maxHeaderListSize(context.limits().maxHeaderBytes()))
                .validateHeaders(true)
                .build());
        pipeline.addBefore(
            "inspected-tunnel",
            "h2-streams",
            new Http2MultiplexHandler(
                new ChannelInitializer<Http2StreamChannel>() {
                  @Override
                  protected void initChannel(Http2StreamChannel stream) {
                    stream
                        .pipeline()
                        .addLast(new Http2StreamFrameToHttpObjectCodec(true, true))
                        .addLast(new InspectedRequests(InspectedTunnel.this, true));
                  }
                }));
        return;
      }
      pipeline.addBefore(
          "inspected-tunnel",
          "h1-decoder",
          new StrictRequestDecoder(context.limits().maxHeaderBytes()));
      pipeline.addBefore("inspected-tunnel", "h1-encoder", new HttpResponseEncoder());
      pipeline.addBefore(
          "inspected-tunnel", "h1", new InspectedRequests(InspectedTunnel.this, false));
    }

    @Override
    protected void handshakeFailure(ChannelHandlerContext ctx, Throwable cause) {
      // Most often a client that does not trust the run's CA (no bundle, pinned certificates).
      attempt.endedBy("client-tls-failed");
      ctx.close();
    }
  }

  /** The tunnel's last handler: the idle limit and errors end the whole tunnel. */
  private final class TunnelEnd extends ChannelInboundHandlerAdapter {
    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object event) {
      if (event instanceof IdleStateEvent) {
        attempt.endedBy("idle-timeout");
        ctx.close();
        return;
      }
      ctx.fireUserEventTriggered(event);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      io.netty.util.ReferenceCountUtil.release(msg);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      attempt.endedBy("error");
      ctx.close();
    }
  }

  /** A new decision for one request of this tunnel: its host, port and pinned address. */
  Attempt requestAttempt(String clientAddress, String method) {
    Attempt request = new Attempt(context, clientAddress, method, route.host(), attempt.port());
    request.address(attempt.address());
    return request;
  }
}
