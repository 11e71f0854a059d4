package dev.agentsandbox.proxy;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.codec.http2.Http2StreamChannelBootstrap;
import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.cert.X509Certificate;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A hand-driven HTTP/2 client inside a CONNECT tunnel, for the attacks a well-behaved client cannot
 * make: any {@code :authority}, {@code :scheme} and {@code host} header on a stream, whatever the
 * TLS server name was. One connection, many streams.
 */
final class H2Tunnel implements AutoCloseable {
  /** What one stream was answered: the status, the denial header, the body. */
  record Answer(int status, String denied, String body) {}

  private final EventLoopGroup group =
      new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
  private final Channel channel;

  H2Tunnel(InetSocketAddress proxy, String target, String sni, X509Certificate trusted)
      throws Exception {
    SslContext tls =
        SslContextBuilder.forClient()
            .trustManager(trusted)
            .applicationProtocolConfig(
                new ApplicationProtocolConfig(
                    ApplicationProtocolConfig.Protocol.ALPN,
                    ApplicationProtocolConfig.SelectorFailureBehavior.NO_ADVERTISE,
                    ApplicationProtocolConfig.SelectedListenerFailureBehavior.ACCEPT,
                    ApplicationProtocolNames.HTTP_2))
            .build();
    int port = Integer.parseInt(target.substring(target.lastIndexOf(':') + 1));
    CompletableFuture<Void> ready = new CompletableFuture<>();
    channel =
        new Bootstrap()
            .group(group)
            .channel(NioSocketChannel.class)
            .handler(
                new ChannelInitializer<SocketChannel>() {
                  @Override
                  protected void initChannel(SocketChannel ch) {
                    ch.pipeline().addLast("connect", new Connect(target, tls, sni, port, ready));
                  }
                })
            .connect(proxy)
            .syncUninterruptibly()
            .channel();
    ready.get(20, TimeUnit.SECONDS);
  }

  /** Sends one request on a new stream with exactly these headers and waits for its answer. */
  Answer send(Http2Headers headers, String body) throws Exception {
    CompletableFuture<Answer> answer = new CompletableFuture<>();
    Http2StreamChannel stream =
        new Http2StreamChannelBootstrap(channel)
            .handler(new StreamReader(answer))
            .open()
            .get(10, TimeUnit.SECONDS);
    stream.writeAndFlush(new DefaultHttp2HeadersFrame(headers, body == null));
    if (body != null) {
      stream.writeAndFlush(
          new DefaultHttp2DataFrame(Unpooled.copiedBuffer(body, StandardCharsets.UTF_8), true));
    }
    return answer.get(20, TimeUnit.SECONDS);
  }

  /** Request headers for {@code method path} on {@code authority}, scheme https. */
  static Http2Headers request(String method, String path, String authority) {
    return new DefaultHttp2Headers().method(method).path(path).scheme("https").authority(authority);
  }

  @Override
  public void close() {
    channel.close().syncUninterruptibly();
    group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
  }

  /** Sends the CONNECT, waits for 200, then turns the connection into TLS and HTTP/2. */
  private static final class Connect extends ChannelInboundHandlerAdapter {
    private final String target;
    private final SslContext tls;
    private final String sni;
    private final int port;
    private final CompletableFuture<Void> ready;
    private final StringBuilder head = new StringBuilder();

    Connect(String target, SslContext tls, String sni, int port, CompletableFuture<Void> ready) {
      this.target = target;
      this.tls = tls;
      this.sni = sni;
      this.port = port;
      this.ready = ready;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
      ctx.writeAndFlush(
          Unpooled.copiedBuffer(
              "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n",
              StandardCharsets.US_ASCII));
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      ByteBuf bytes = (ByteBuf) msg;
      head.append(bytes.toString(StandardCharsets.US_ASCII));
      bytes.release();
      if (!head.toString().contains("\r\n\r\n")) {
        return;
      }
      if (!head.toString().startsWith("HTTP/1.1 200")) {
        ready.completeExceptionally(new IllegalStateException("CONNECT answered: " + head));
        ctx.close();
        return;
      }
      SslHandler ssl = tls.newHandler(ctx.alloc(), sni, port);
      ctx.pipeline().addLast(ssl);
      ctx.pipeline().addLast(Http2FrameCodecBuilder.forClient().build());
      ctx.pipeline().addLast(new Http2MultiplexHandler(new ChannelInboundHandlerAdapter()));
      ctx.pipeline().remove(this);
      ssl.handshakeFuture()
          .addListener(
              done -> {
                if (done.isSuccess()) {
                  ready.complete(null);
                } else {
                  ready.completeExceptionally(done.cause());
                }
              });
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      ready.completeExceptionally(cause);
      ctx.close();
    }
  }

  private static final class StreamReader extends ChannelInboundHandlerAdapter {
    private final CompletableFuture<Answer> answer;
    private final StringBuilder body = new StringBuilder();
    private int status;
    private String denied;

    StreamReader(CompletableFuture<Answer> answer) {
      this.answer = answer;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      if (msg instanceof Http2HeadersFrame headers) {
        if (headers.headers().status() != null) {
          status = Integer.parseInt(headers.headers().status().toString());
          CharSequence value = headers.headers().get("x-agent-sandbox-denied");
          denied = value == null ? null : value.toString();
        }
        if (headers.isEndStream()) {
          answer.complete(new Answer(status, denied, body.toString()));
        }
      } else if (msg instanceof Http2DataFrame data) {
        body.append(data.content().toString(StandardCharsets.UTF_8));
        boolean end = data.isEndStream();
        data.release();
        if (end) {
          answer.complete(new Answer(status, denied, body.toString()));
        }
      } else {
        io.netty.util.ReferenceCountUtil.release(msg);
      }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      answer.complete(new Answer(status, denied, body.toString()));
    }
  }
}
