package dev.agentsandbox.proxy;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.SocketChannel;
import io.netty.util.ReferenceCountUtil;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Ends a client connection after a refusal the way HTTP servers do (nginx's {@code
 * lingering_close}): the answer is out, the proxy half-closes (FIN) and reads and drops whatever
 * the client still sends, until the client closes, {@link #MAX_BYTES} arrived or {@link #MAX_TIME}
 * passed; then it closes. Closing at once with a request body still arriving makes the kernel send
 * a reset, which can destroy the refusal in the client's receive buffer: a client that writes its
 * whole body before it reads (Python's urllib) then sees "connection reset" instead of the 403.
 *
 * <p>The dropping handler goes first in the pipeline, so nothing after the refusal reaches the
 * request decoder or the request handling: a refused connection carries nothing anywhere.
 */
final class LingeringClose extends ChannelInboundHandlerAdapter {
  static final long MAX_BYTES = 64L * 1024 * 1024;
  static final Duration MAX_TIME = Duration.ofSeconds(10);

  private long received;

  private LingeringClose() {}

  /** Half-closes {@code client}, then drops its input until it closes or a bound is reached. */
  static void start(Channel client) {
    if (!client.isActive() || !(client instanceof SocketChannel socket)) {
      client.close();
      return;
    }
    client.pipeline().addFirst("lingering-close", new LingeringClose());
    client.eventLoop().schedule(() -> client.close(), MAX_TIME.toMillis(), TimeUnit.MILLISECONDS);
    socket
        .shutdownOutput()
        .addListener(
            done -> {
              if (!done.isSuccess()) {
                client.close();
              }
            });
    // Read on explicitly as well as by auto-read: the connection's back-pressure (Flow) may turn
    // auto-read off again when the request's forwarder ends, which would stop the draining and
    // leave the client blocked on its body until the time-out, then reset.
    client.config().setAutoRead(true);
    client.read();
  }

  @Override
  public void channelReadComplete(ChannelHandlerContext ctx) {
    ctx.read();
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (msg instanceof ByteBuf bytes) {
      received += bytes.readableBytes();
    }
    ReferenceCountUtil.release(msg);
    if (received > MAX_BYTES) {
      ctx.close();
    }
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    // A reset from the client while lingering ends it; there is no one left to tell.
    ctx.close();
  }
}
