package dev.agentsandbox.proxy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.ReferenceCountUtil;

/**
 * Copies bytes from one side of a tunnel to the other, counting them. Backpressure: when the peer
 * cannot take more (its outbound buffer passed the high-water mark), this side stops reading until
 * the peer drains, so a fast sender never makes the proxy buffer without bound.
 */
final class RelayHandler extends ChannelInboundHandlerAdapter {
  private final Channel peer;
  private final Attempt attempt;
  private final boolean clientSide;

  /**
   * Relays what arrives on this channel to {@code peer}; {@code clientSide} says whether this
   * channel is the client's (its bytes count as up).
   */
  RelayHandler(Channel peer, Attempt attempt, boolean clientSide) {
    this.peer = peer;
    this.attempt = attempt;
    this.clientSide = clientSide;
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (!(msg instanceof ByteBuf bytes)) {
      ReferenceCountUtil.release(msg);
      return;
    }
    if (clientSide) {
      attempt.countUp(bytes.readableBytes());
    } else {
      attempt.countDown(bytes.readableBytes());
    }
    if (!peer.isActive()) {
      bytes.release();
      return;
    }
    peer.write(bytes, peer.voidPromise());
    if (!peer.isWritable()) {
      // Stop reading before flushing: both sides share one event loop, so when the flush drains
      // the peer at once its writability event fires inside flush() and turns reading back on.
      // Turning it off after the flush undid that, and the tunnel stalled for good.
      ctx.channel().config().setAutoRead(false);
      peer.flush();
    }
  }

  @Override
  public void channelReadComplete(ChannelHandlerContext ctx) {
    peer.flush();
  }

  @Override
  public void channelWritabilityChanged(ChannelHandlerContext ctx) {
    if (ctx.channel().isWritable() && peer.isActive()) {
      peer.config().setAutoRead(true);
    }
    ctx.fireChannelWritabilityChanged();
  }

  @Override
  public void userEventTriggered(ChannelHandlerContext ctx, Object event) {
    if (event instanceof IdleStateEvent) {
      attempt.endedBy("idle-timeout");
      ctx.close();
      peer.close();
      return;
    }
    ctx.fireUserEventTriggered(event);
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    attempt.endedBy(clientSide ? "client-closed" : "upstream-closed");
    // Flush what the closing side already sent, then close: a half-finished response still lands.
    if (peer.isActive()) {
      peer.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
    }
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    attempt.endedBy("error");
    ctx.close();
    peer.close();
  }
}
