package dev.agentsandbox.proxy;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;

/**
 * Reads the requests of an inspected tunnel and serves each as its own {@link InspectedExchange}:
 * on an HTTP/1.1 connection one at a time, requests pipelined behind the current one held (reading
 * paused) until it is answered, so that each is decided on its own and a refusal ends the
 * connection before anything behind it is read; on HTTP/2 one handler per stream, each stream one
 * request, decided on its own while the others go on. Confined to its channel's event loop.
 */
final class InspectedRequests extends ChannelInboundHandlerAdapter
    implements InspectedExchange.Owner {
  private final InspectedTunnel tunnel;
  private final boolean http2;
  private final ArrayDeque<Object> pending = new ArrayDeque<>();
  private ChannelHandlerContext ctx;
  private Flow reading;
  private InspectedExchange exchange;
  private boolean refused;

  InspectedRequests(InspectedTunnel tunnel, boolean http2) {
    this.tunnel = tunnel;
    this.http2 = http2;
  }

  @Override
  public void handlerAdded(ChannelHandlerContext context) {
    this.ctx = context;
    reading = new Flow(context.channel(), null);
    reading.want(true);
  }

  @Override
  public void channelRead(ChannelHandlerContext context, Object msg) {
    if (refused) {
      ReferenceCountUtil.release(msg);
    } else if (exchange != null) {
      if (msg instanceof HttpContent content && exchange.takesBody()) {
        exchange.body(content);
      } else if (http2) {
        // A stream carries one request; anything after its end is not another.
        ReferenceCountUtil.release(msg);
      } else {
        pending.add(msg);
      }
    } else if (msg instanceof HttpRequest request) {
      reading.want(false);
      exchange =
          new InspectedExchange(
              tunnel,
              context.channel(),
              reading,
              this,
              tunnel.requestAttempt(clientAddress(), Echo.of(request.method().name())),
              http2);
      exchange.start(request);
    } else {
      // Content of a request that was already answered.
      ReferenceCountUtil.release(msg);
    }
  }

  @Override
  public void finished(boolean keepOpen) {
    exchange = null;
    if (http2) {
      return;
    }
    if (!keepOpen) {
      ctx.close();
      return;
    }
    while (exchange == null && !refused && !pending.isEmpty()) {
      channelRead(ctx, pending.poll());
    }
    if (exchange != null) {
      while (!pending.isEmpty() && exchange != null && exchange.takesBody()) {
        Object next = pending.peek();
        if (!(next instanceof HttpContent)) {
          break;
        }
        exchange.body((HttpContent) pending.poll());
      }
      reading.flush();
      return;
    }
    if (!refused) {
      reading.want(true);
    }
  }

  @Override
  public void refused() {
    refused = true;
    while (!pending.isEmpty()) {
      ReferenceCountUtil.release(pending.poll());
    }
  }

  @Override
  public void channelReadComplete(ChannelHandlerContext context) {
    reading.flush();
    context.fireChannelReadComplete();
  }

  @Override
  public void channelWritabilityChanged(ChannelHandlerContext context) {
    if (exchange != null) {
      exchange.clientWritabilityChanged();
    }
    context.fireChannelWritabilityChanged();
  }

  @Override
  public void channelInactive(ChannelHandlerContext context) {
    if (exchange != null) {
      exchange.clientClosed();
    }
    while (!pending.isEmpty()) {
      ReferenceCountUtil.release(pending.poll());
    }
    context.fireChannelInactive();
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext context, Throwable cause) {
    if (exchange != null) {
      exchange.endedBy("error");
    } else if (http2 && !refused) {
      // The HTTP/2 codec refused the stream's headers itself (conflicting :authority and host,
      // an upper-case or connection-specific header, a bad pseudo-header) and reset the stream
      // before any request existed: it is still a refusal, and reported as one.
      refused = true;
      tunnel
          .requestAttempt(clientAddress(), "-")
          .deny(
              dev.agentsandbox.policy.net.Reason.BAD_REQUEST,
              "malformed HTTP/2 request: " + ClientHandler.describe(rootCause(cause)));
    }
    context.close();
  }

  private static Throwable rootCause(Throwable cause) {
    Throwable root = cause;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    return root;
  }

  private String clientAddress() {
    Channel channel = ctx.channel();
    Channel connection = channel instanceof Http2StreamChannel stream ? stream.parent() : channel;
    if (connection.remoteAddress() instanceof InetSocketAddress remote) {
      return dev.agentsandbox.policy.net.IpLiteral.format(remote.getAddress())
          + ":"
          + remote.getPort();
    }
    return String.valueOf(connection.remoteAddress());
  }
}
