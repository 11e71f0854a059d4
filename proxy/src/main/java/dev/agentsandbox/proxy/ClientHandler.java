package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.net.Reason;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;

/**
 * The client connection's HTTP side: takes one request at a time, decides it on its own, and hands
 * it to a {@link ConnectTunnel} or an {@link HttpForwarder}. Requests pipelined behind the current
 * one wait (reading is paused meanwhile), so every request on a keep-alive connection gets its own
 * decision and its own upstream connection.
 */
final class ClientHandler extends ChannelInboundHandlerAdapter {
  private final ProxyContext context;
  private final ArrayDeque<Object> pending = new ArrayDeque<>();
  private Flow reading;
  private ConnectTunnel tunnel;
  private HttpForwarder forwarder;
  private boolean refused;

  ClientHandler(ProxyContext context) {
    this.context = context;
  }

  @Override
  public void handlerAdded(ChannelHandlerContext ctx) {
    // The client's one flow: reads heads while idle, feeds a forwarder's or tunnel's upstream.
    reading = new Flow(ctx.channel(), null);
    reading.want(true);
  }

  /** The forwarder serving the current request, or null. */
  HttpForwarder forwarder() {
    return forwarder;
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (tunnel != null) {
      tunnel.early(msg);
    } else if (refused) {
      ReferenceCountUtil.release(msg);
    } else if (forwarder != null) {
      if (msg instanceof HttpContent content && forwarder.takesBody()) {
        forwarder.body(content);
      } else {
        pending.add(msg);
      }
    } else {
      handle(ctx, msg);
    }
  }

  private void handle(ChannelHandlerContext ctx, Object msg) {
    if (!(msg instanceof HttpRequest request)) {
      // Content of a request that was already answered, or bytes after a refusal.
      ReferenceCountUtil.release(msg);
      return;
    }
    reading.want(false);
    String method = Echo.of(request.method().name());
    Attempt attempt = new Attempt(context, client(ctx), method, "", 0);
    if (context.awaitingPolicy()) {
      // Accepted before the run's policy arrived: refused whatever it is, before its target is
      // even parsed; the connection ends with the refusal, so nothing on it is decided later.
      refused = true;
      ReferenceCountUtil.release(msg);
      Refusals.refuse(
          ctx.channel(),
          attempt,
          Reason.POLICY_PENDING,
          "this proxy has no policy yet: it refuses everything until its run's policy arrives");
      return;
    }
    if (request.decoderResult().isFailure()) {
      refused = true;
      Throwable cause = request.decoderResult().cause();
      ReferenceCountUtil.release(msg);
      if (cause instanceof TooLongFrameException) {
        Refusals.refuse(
            ctx.channel(),
            attempt,
            Reason.HEADER_TOO_LARGE,
            "the request head is larger than " + context.limits().maxHeaderBytes() + " bytes");
      } else {
        Refusals.refuse(
            ctx.channel(), attempt, Reason.BAD_REQUEST, "malformed request: " + describe(cause));
      }
      return;
    }
    if (HttpMethod.CONNECT.equals(request.method())) {
      tunnel = new ConnectTunnel(context, ctx.channel(), attempt, reading);
      ReferenceCountUtil.release(msg);
      tunnel.start(request.uri());
      return;
    }
    forwarder = new HttpForwarder(context, ctx.channel(), attempt, this, reading);
    forwarder.start(request);
  }

  /** Called by the forwarder when its response is complete and the connection stays open. */
  void requestFinished(ChannelHandlerContext ctx) {
    forwarder = null;
    while (forwarder == null && tunnel == null && !refused && !pending.isEmpty()) {
      channelRead(ctx, pending.poll());
    }
    if (forwarder != null) {
      // The next request started; it will resume reading when it is ready for more.
      while (!pending.isEmpty() && forwarder != null && forwarder.takesBody()) {
        Object next = pending.peek();
        if (!(next instanceof HttpContent)) {
          break;
        }
        forwarder.body((HttpContent) pending.poll());
      }
      reading.flush();
      return;
    }
    if (tunnel == null && !refused) {
      reading.want(true);
    }
  }

  /** Called by the forwarder when it answered a refusal: nothing more is read. */
  void requestRefused() {
    refused = true;
  }

  @Override
  public void channelReadComplete(ChannelHandlerContext ctx) {
    // Flushes the request body forwarded in this read burst (nothing when no upstream is fed).
    reading.flush();
    ctx.fireChannelReadComplete();
  }

  @Override
  public void channelWritabilityChanged(ChannelHandlerContext ctx) {
    if (forwarder != null) {
      forwarder.clientWritabilityChanged();
    }
    ctx.fireChannelWritabilityChanged();
  }

  @Override
  public void userEventTriggered(ChannelHandlerContext ctx, Object event) {
    if (event instanceof IdleStateEvent) {
      if (forwarder != null) {
        forwarder.endedBy("idle-timeout");
      }
      ctx.close();
      return;
    }
    ctx.fireUserEventTriggered(event);
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    if (forwarder != null) {
      forwarder.clientClosed();
    }
    if (tunnel != null) {
      tunnel.clientClosed();
    }
    while (!pending.isEmpty()) {
      ReferenceCountUtil.release(pending.poll());
    }
    ctx.fireChannelInactive();
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    if (forwarder != null) {
      forwarder.endedBy("error");
    }
    ctx.close();
  }

  static String client(ChannelHandlerContext ctx) {
    if (ctx.channel().remoteAddress() instanceof InetSocketAddress remote) {
      return dev.agentsandbox.policy.net.IpLiteral.format(remote.getAddress())
          + ":"
          + remote.getPort();
    }
    return String.valueOf(ctx.channel().remoteAddress());
  }

  static String describe(Throwable cause) {
    String message = cause.getMessage();
    return Echo.of(message == null ? cause.getClass().getSimpleName() : message);
  }
}
