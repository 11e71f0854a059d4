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
 * One side of a CONNECT tunnel: copies the bytes arriving on its channel into the peer through
 * {@link Flow} (which owns back-pressure), counting them, and reports the channel's writability to
 * the flow coming the other way.
 */
final class RelayHandler extends ChannelInboundHandlerAdapter {
  private final Flow out;
  private final Flow in;
  private final Attempt attempt;
  private final boolean clientSide;

  /**
   * Relays this channel's bytes through {@code out}; {@code in} is the flow into this channel;
   * {@code clientSide} says whether this channel is the client's (its bytes count as up).
   */
  RelayHandler(Flow out, Flow in, Attempt attempt, boolean clientSide) {
    this.out = out;
    this.in = in;
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
    if (!out.sink().isActive()) {
      bytes.release();
      return;
    }
    out.forward(bytes);
  }

  @Override
  public void channelReadComplete(ChannelHandlerContext ctx) {
    out.flush();
  }

  @Override
  public void channelWritabilityChanged(ChannelHandlerContext ctx) {
    in.sinkWritabilityChanged();
    ctx.fireChannelWritabilityChanged();
  }

  @Override
  public void userEventTriggered(ChannelHandlerContext ctx, Object event) {
    if (event instanceof IdleStateEvent) {
      attempt.endedBy("idle-timeout");
      ctx.close();
      out.sink().close();
      return;
    }
    ctx.fireUserEventTriggered(event);
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    attempt.endedBy(clientSide ? "client-closed" : "upstream-closed");
    // Flush what the closing side already sent, then close: a half-finished response still lands.
    Channel peer = out.sink();
    if (peer.isActive()) {
      peer.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
    }
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    attempt.endedBy("error");
    ctx.close();
    out.sink().close();
  }
}
