package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.net.Reason;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ConnectTimeoutException;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * The upstream connections of one inspected tunnel: every one to the address the proxy checked and
 * pinned when it decided the tunnel (never resolved again), each with TLS verified for the host
 * ({@link UpstreamTls}), kept alive between requests of the same tunnel and never shared with
 * another tunnel, host or run. At most {@link #MAX} at once (the HTTP/2 streams a client may open
 * concurrently); further requests wait for one to come back. Confined to the client's event loop.
 */
final class UpstreamPool {
  /** As many as the streams a client's HTTP/2 connection may have open (its SETTINGS say so). */
  static final int MAX = 16;

  private final ProxyContext context;
  private final Channel client;
  private final String host;
  private final int port;
  private final InetSocketAddress pinned;
  private final ArrayDeque<Connection> idle = new ArrayDeque<>();
  private final ArrayDeque<Waiter> waiting = new ArrayDeque<>();
  private int open;
  private boolean closed;

  UpstreamPool(
      ProxyContext context, Channel client, String host, int port, InetSocketAddress pinned) {
    this.context = context;
    this.client = client;
    this.host = host;
    this.port = port;
    this.pinned = pinned;
  }

  /** A request's wish for a connection, or its failure's reason and detail. */
  private record Waiter(Consumer<Connection> ready, BiConsumer<Reason, String> failed) {}

  /**
   * Verifies TLS on {@code channel} (just connected to {@link #pinned}); on success it joins the
   * pool as an idle connection and {@code ready} runs.
   */
  void handshake(Channel channel, Runnable ready, BiConsumer<Reason, String> failed) {
    open++;
    secure(
        channel,
        connection -> {
          release(connection, true);
          ready.run();
        },
        failed);
  }

  /** Hands an idle connection to {@code ready}, or makes one, or queues the wish. */
  void acquire(Consumer<Connection> ready, BiConsumer<Reason, String> failed) {
    if (closed) {
      failed.accept(Reason.CONNECT_FAILED, "the tunnel is closing");
      return;
    }
    while (!idle.isEmpty()) {
      Connection connection = idle.poll();
      if (connection.channel.isActive()) {
        connection.channel.config().setAutoRead(false);
        ready.accept(connection);
        return;
      }
    }
    if (open >= MAX) {
      waiting.add(new Waiter(ready, failed));
      return;
    }
    dial(ready, failed);
  }

  private void dial(Consumer<Connection> ready, BiConsumer<Reason, String> failed) {
    open++;
    ChannelFuture connecting =
        context
            .connector()
            .connect(client, pinned, new ConnectTunnel.PlaceholderHandler(), context.limits());
    connecting.addListener(
        (ChannelFuture done) -> {
          if (!done.isSuccess()) {
            open--;
            if (done.cause() instanceof ConnectTimeoutException) {
              failed.accept(
                  Reason.CONNECT_TIMEOUT,
                  "no answer within " + context.limits().connectTimeout().toMillis() + " ms");
            } else {
              failed.accept(Reason.CONNECT_FAILED, "the upstream refused the connection");
            }
            return;
          }
          if (closed) {
            done.channel().close();
            return;
          }
          secure(done.channel(), ready, failed);
        });
  }

  private void secure(
      Channel channel, Consumer<Connection> ready, BiConsumer<Reason, String> failed) {
    Connection connection = new Connection(this, channel);
    SslHandler tls = context.inspection().upstream().newHandler(channel.alloc(), host, port);
    io.netty.channel.ChannelPipeline pipeline = channel.pipeline();
    pipeline.addFirst("tls", tls);
    pipeline.replace(ConnectTunnel.PlaceholderHandler.class, "upstream", connection);
    pipeline.addBefore(
        "upstream", "codec", new HttpClientCodec(8192, context.limits().maxHeaderBytes(), 8192));
    channel.closeFuture().addListener(f -> closedConnection(connection));
    channel.config().setAutoRead(true);
    tls.handshakeFuture()
        .addListener(
            handshake -> {
              channel.config().setAutoRead(false);
              if (handshake.isSuccess()) {
                ready.accept(connection);
                return;
              }
              UpstreamTls.Failure failure = UpstreamTls.classify(handshake.cause(), host);
              channel.close();
              failed.accept(failure.reason(), failure.detail());
            });
  }

  /**
   * Gives a connection back after an exchange: kept for the next request when {@code reusable} (the
   * response was framed and kept alive, the request sent whole), else closed.
   */
  void release(Connection connection, boolean reusable) {
    connection.exchange = null;
    if (!reusable || closed || !connection.channel.isActive()) {
      connection.channel.close();
      return;
    }
    Waiter next = waiting.poll();
    if (next != null) {
      next.ready().accept(connection);
      return;
    }
    idle.push(connection);
    // Read while idle, so that an upstream closing an idle connection is noticed.
    connection.channel.config().setAutoRead(true);
  }

  private void closedConnection(Connection connection) {
    open--;
    idle.remove(connection);
    if (!closed && !waiting.isEmpty() && open < MAX) {
      Waiter next = waiting.poll();
      dial(next.ready(), next.failed());
    }
  }

  /** Closes every connection; waiting requests fail. */
  void close() {
    closed = true;
    for (Connection connection : idle) {
      connection.channel.close();
    }
    idle.clear();
    while (!waiting.isEmpty()) {
      waiting.poll().failed().accept(Reason.CONNECT_FAILED, "the tunnel closed");
    }
  }

  /** The first idle connection's channel, for a guard that closes it with the client. */
  Channel anyChannel() {
    Connection first = idle.peek();
    return first == null ? null : first.channel;
  }

  /** One upstream connection: its pipeline's last handler, reporting to its current exchange. */
  static final class Connection extends ChannelInboundHandlerAdapter {
    private final UpstreamPool pool;
    final Channel channel;
    private InspectedExchange exchange;

    Connection(UpstreamPool pool, Channel channel) {
      this.pool = pool;
      this.channel = channel;
    }

    void attach(InspectedExchange current) {
      this.exchange = current;
    }

    UpstreamPool pool() {
      return pool;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      if (exchange == null) {
        // Nothing was asked: an idle upstream that speaks is not trusted to stay in step.
        ReferenceCountUtil.release(msg);
        ctx.close();
        return;
      }
      exchange.upstreamRead(msg);
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
      if (exchange != null) {
        exchange.upstreamReadComplete();
      }
      ctx.fireChannelReadComplete();
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
      if (exchange != null) {
        exchange.upstreamWritabilityChanged();
      }
      ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      if (exchange != null) {
        exchange.upstreamClosed();
      }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      ctx.close();
    }
  }
}
