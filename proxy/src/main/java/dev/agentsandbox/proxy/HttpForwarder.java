package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.net.Decision;
import dev.agentsandbox.policy.net.Reason;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;

/**
 * One plain HTTP request in absolute form: decided on its own target, sent over a fresh upstream
 * connection to the checked address (never reused for another request or target), with the Host
 * header rewritten to the target and hop-by-hop and proxy headers stripped. Confined to the client
 * channel's event loop.
 */
final class HttpForwarder {
  private final ProxyContext context;
  private final Channel client;
  private final Attempt attempt;
  private final ClientHandler owner;
  private final ArrayDeque<HttpContent> queued = new ArrayDeque<>();
  private Channel upstream;
  private HttpRequest outgoing;
  private boolean requestComplete;
  private boolean keepAlive;
  private boolean clientHttp11;
  private boolean headRequest;
  private boolean responseStarted;
  private boolean informational;
  private boolean finished;
  private ScheduledFuture<?> lifetime;

  HttpForwarder(ProxyContext context, Channel client, Attempt attempt, ClientHandler owner) {
    this.context = context;
    this.client = client;
    this.attempt = attempt;
    this.owner = owner;
  }

  boolean requestComplete() {
    return requestComplete;
  }

  void endedBy(String cause) {
    attempt.endedBy(cause);
  }

  void start(HttpRequest request) {
    ReferenceCountUtil.release(request);
    AbsoluteTarget target = AbsoluteTarget.parse(request.uri());
    if (target.problem() != null) {
      refuse(target.problemReason(), target.problem());
      return;
    }
    String framing = HttpMessages.framingProblem(request.headers());
    if (framing != null) {
      refuse(Reason.BAD_REQUEST, framing);
      return;
    }
    Decision decision =
        target.port() == AbsoluteTarget.NO_PORT
            ? context.egress().decide(target.host(), 80)
            : context.egress().decideAuthority(target.authority());
    attempt.target(decision.host(), decision.port());
    if (!decision.allowed()) {
      refuse(decision.reason(), decision.detail());
      return;
    }
    if (HttpMessages.isUpgrade(request.headers())) {
      refuse(Reason.UPGRADE_REFUSED, "protocol upgrades (WebSocket, h2c) are not proxied");
      return;
    }
    keepAlive = HttpUtil.isKeepAlive(request);
    clientHttp11 = request.protocolVersion().equals(HttpVersion.HTTP_1_1);
    headRequest = HttpMethod.HEAD.equals(request.method());
    outgoing =
        new DefaultHttpRequest(
            HttpVersion.HTTP_1_1, request.method(), target.originForm(), request.headers().copy());
    HttpMessages.stripHopByHop(outgoing.headers());
    outgoing
        .headers()
        .set(
            HttpHeaderNames.HOST,
            decision.host() + (decision.port() == 80 ? "" : ":" + decision.port()))
        .set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
    Dialer.dial(context, client, attempt, new UpstreamResponseHandler(this), this::connected);
  }

  void body(HttpContent content) {
    if (content.decoderResult().isFailure()) {
      content.release();
      abort(
          Reason.BAD_REQUEST,
          "malformed body: " + ClientHandler.describe(content.decoderResult().cause()));
      return;
    }
    attempt.countUp(content.content().readableBytes());
    if (content instanceof LastHttpContent) {
      requestComplete = true;
      client.config().setAutoRead(false);
    }
    if (upstream == null) {
      queued.add(content);
      return;
    }
    upstream.writeAndFlush(content, upstream.voidPromise());
    if (!upstream.isWritable()) {
      client.config().setAutoRead(false);
    }
  }

  private void connected(Channel channel) {
    if (!client.isActive()) {
      channel.close();
      return;
    }
    upstream = channel;
    context.metrics().tunnelOpened();
    lifetime =
        client
            .eventLoop()
            .schedule(
                () -> {
                  attempt.endedBy("lifetime-exceeded");
                  upstream.close();
                  client.close();
                },
                context.limits().maxLifetime().toMillis(),
                TimeUnit.MILLISECONDS);
    upstream.write(outgoing, upstream.voidPromise());
    while (!queued.isEmpty()) {
      upstream.write(queued.poll(), upstream.voidPromise());
    }
    upstream.flush();
    upstream.config().setAutoRead(true);
    if (!requestComplete) {
      client.config().setAutoRead(upstream.isWritable());
    }
  }

  void upstreamWritabilityChanged() {
    if (upstream != null && upstream.isWritable() && !requestComplete && client.isActive()) {
      client.config().setAutoRead(true);
    }
  }

  void clientWritabilityChanged() {
    if (upstream != null && client.isWritable()) {
      upstream.config().setAutoRead(true);
    }
  }

  void response(HttpResponse response) {
    if (response.decoderResult().isFailure() || response.status().code() == 101) {
      ReferenceCountUtil.release(response);
      attempt.endedBy("error");
      fail();
      return;
    }
    HttpMessages.stripHopByHop(response.headers());
    // An intermediary speaks its own HTTP version on each hop (RFC 9110 section 6.2).
    response.setProtocolVersion(HttpVersion.HTTP_1_1);
    int code = response.status().code();
    informational = code >= 100 && code < 200;
    if (!informational) {
      responseStarted = true;
      boolean bodyless = headRequest || code == 204 || code == 304;
      boolean framed =
          bodyless
              || HttpUtil.isContentLengthSet(response)
              || HttpUtil.isTransferEncodingChunked(response);
      if (!framed && clientHttp11) {
        // A body delimited by the upstream's close: re-frame it in chunks so the client
        // connection can stay open.
        HttpUtil.setTransferEncodingChunked(response, true);
      } else if (!framed) {
        // An HTTP/1.0 client knows no chunks: the close delimits the body, as upstream.
        keepAlive = false;
      }
      if (!keepAlive) {
        response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
      }
    }
    client.write(response, client.voidPromise());
  }

  void content(HttpContent content) {
    if (content.decoderResult().isFailure()) {
      content.release();
      attempt.endedBy("error");
      fail();
      return;
    }
    attempt.countDown(content.content().readableBytes());
    boolean last = content instanceof LastHttpContent;
    if (last && informational) {
      informational = false;
      client.writeAndFlush(content, client.voidPromise());
      return;
    }
    if (!last) {
      client.writeAndFlush(content, client.voidPromise());
      if (!client.isWritable()) {
        upstream.config().setAutoRead(false);
      }
      return;
    }
    finished = true;
    attempt.endedBy("complete");
    client
        .writeAndFlush(content)
        .addListener(
            (ChannelFutureListener)
                done -> {
                  release();
                  attempt.allowEnded();
                  if (keepAlive && done.isSuccess() && requestComplete) {
                    owner.requestFinished(client.pipeline().context(ClientHandler.class));
                  } else {
                    client.close();
                  }
                });
  }

  void upstreamClosed() {
    if (finished) {
      return;
    }
    attempt.endedBy("upstream-closed");
    fail();
  }

  void clientClosed() {
    for (HttpContent content : queued) {
      content.release();
    }
    queued.clear();
    if (finished) {
      return;
    }
    attempt.endedBy("client-closed");
    fail();
  }

  /** Ends an allowed request that could not complete: the client learns by the close. */
  private void fail() {
    if (finished) {
      return;
    }
    finished = true;
    release();
    attempt.allowEnded();
    if (!responseStarted && client.isActive()) {
      // Nothing was sent to the client yet, so it still gets a proper answer.
      Refusals.badGateway(client);
      return;
    }
    client.close();
  }

  private void abort(Reason reason, String detail) {
    finished = true;
    release();
    owner.requestRefused();
    if (responseStarted) {
      attempt.deny(reason, detail);
      client.close();
    } else {
      Refusals.refuse(client, attempt, reason, detail);
    }
  }

  private void refuse(Reason reason, String detail) {
    finished = true;
    owner.requestRefused();
    Refusals.refuse(client, attempt, reason, detail);
  }

  private void release() {
    if (lifetime != null) {
      lifetime.cancel(false);
      lifetime = null;
    }
    if (upstream != null) {
      context.metrics().tunnelClosed();
      upstream.close();
      upstream = null;
    }
    for (HttpContent content : queued) {
      content.release();
    }
    queued.clear();
  }

  /** Reports on the upstream channel. */
  static final class UpstreamResponseHandler extends io.netty.channel.ChannelInboundHandlerAdapter {
    private final HttpForwarder forwarder;

    UpstreamResponseHandler(HttpForwarder forwarder) {
      this.forwarder = forwarder;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
      ctx.pipeline()
          .addBefore(
              ctx.name(),
              "codec",
              new io.netty.handler.codec.http.HttpClientCodec(
                  8192, forwarder.context.limits().maxHeaderBytes(), 8192));
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      if (forwarder.finished || forwarder.upstream != ctx.channel()) {
        ReferenceCountUtil.release(msg);
        return;
      }
      if (msg instanceof HttpResponse response) {
        forwarder.response(response);
      }
      if (msg instanceof HttpContent content) {
        forwarder.content(content);
      } else if (!(msg instanceof HttpResponse)) {
        ReferenceCountUtil.release(msg);
      }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
      forwarder.upstreamWritabilityChanged();
      ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      if (forwarder.upstream == ctx.channel()) {
        forwarder.upstreamClosed();
      }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      ctx.close();
    }
  }
}
