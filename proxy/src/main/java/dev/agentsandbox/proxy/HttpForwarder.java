package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.net.Decision;
import dev.agentsandbox.policy.net.Reason;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.HttpClientCodec;
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
 * header rewritten to the target and hop-by-hop and proxy headers stripped. An explicit state
 * machine ({@link ForwardState}); every change of state goes through {@link #moveTo}, which refuses
 * a transition the table does not list. The request body and the response stream through {@link
 * Flow}s, which own back-pressure. Confined to the client channel's event loop.
 */
final class HttpForwarder {
  private final ProxyContext context;
  private final Channel client;
  private final Attempt attempt;
  private final ClientHandler owner;
  private final Flow reading;
  private final ArrayDeque<HttpContent> held = new ArrayDeque<>();
  private ForwardState state = ForwardState.DECIDING;
  private Channel upstream;
  private Flow response;
  private HttpRequest outgoing;
  private boolean keepAlive;
  private boolean clientHttp11;
  private boolean headRequest;
  private ScheduledFuture<?> lifetime;

  /** {@code reading} is the client's flow, paused by the owner when the request head arrived. */
  HttpForwarder(
      ProxyContext context, Channel client, Attempt attempt, ClientHandler owner, Flow reading) {
    this.context = context;
    this.client = client;
    this.attempt = attempt;
    this.owner = owner;
    this.reading = reading;
  }

  ForwardState state() {
    return state;
  }

  /** Whether the client's next body part belongs to this request. */
  boolean takesBody() {
    return state.takesRequestBody();
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
    String originForm = target.originForm();
    java.util.Optional<Inspection.Route> inspected = context.inspected(decision.host());
    if (inspected.isPresent()) {
      // Plain HTTP to an inspected host is held to the same rules as its HTTPS (never a way around
      // them) and sent with its path normalised; no credential is ever set on plain HTTP.
      Inspection.Verdict verdict = inspected.get().check(request.method().name(), originForm);
      verdict.path().ifPresent(path -> attempt.path(path.path()));
      if (verdict.refusal().isPresent()) {
        refuse(verdict.refusal().get(), verdict.detail());
        return;
      }
      originForm = verdict.path().orElseThrow().forwarded();
    }
    keepAlive = HttpUtil.isKeepAlive(request);
    clientHttp11 = request.protocolVersion().equals(HttpVersion.HTTP_1_1);
    headRequest = HttpMethod.HEAD.equals(request.method());
    outgoing =
        new DefaultHttpRequest(
            HttpVersion.HTTP_1_1, request.method(), originForm, request.headers().copy());
    HttpMessages.stripHopByHop(outgoing.headers());
    outgoing
        .headers()
        .set(
            HttpHeaderNames.HOST,
            decision.host() + (decision.port() == 80 ? "" : ":" + decision.port()))
        .set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
    moveTo(ForwardState.CONNECTING);
    Dialer.dial(
        context, client, attempt, new UpstreamHandler(this), this::connected, this::dialRefused);
  }

  /** A part of the request body, while {@link #takesBody()}. */
  void body(HttpContent content) {
    if (!state.takesRequestBody()) {
      content.release();
      throw new IllegalStateException("a request body part in state " + state);
    }
    if (content.decoderResult().isFailure()) {
      content.release();
      abort(
          Reason.BAD_REQUEST,
          "malformed body: " + ClientHandler.describe(content.decoderResult().cause()));
      return;
    }
    attempt.countUp(content.content().readableBytes());
    boolean last = content instanceof LastHttpContent;
    if (state == ForwardState.CONNECTING) {
      held.add(content);
      if (last) {
        moveTo(ForwardState.CONNECTING_REQUEST_READ);
      }
      return;
    }
    reading.forward(content);
    if (last) {
      reading.flush();
      moveTo(
          state == ForwardState.SENDING ? ForwardState.AWAITING_RESPONSE : ForwardState.RECEIVING);
    }
  }

  private void connected(Channel channel) {
    if (state == ForwardState.DONE || !client.isActive()) {
      // The exchange ended (the client left, or its body was refused) while dialling.
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
    while (!held.isEmpty()) {
      upstream.write(held.poll(), upstream.voidPromise());
    }
    upstream.flush();
    reading.feed(upstream);
    response = new Flow(upstream, client);
    response.want(true);
    moveTo(
        state == ForwardState.CONNECTING ? ForwardState.SENDING : ForwardState.AWAITING_RESPONSE);
  }

  /** The dialer refused (DNS, address, connect) and already answered the client. */
  private void dialRefused() {
    if (state != ForwardState.DONE) {
      moveTo(ForwardState.DONE);
      owner.requestRefused();
    }
  }

  void clientWritabilityChanged() {
    if (response != null) {
      response.sinkWritabilityChanged();
    }
  }

  private void response(HttpResponse head) {
    if (head.decoderResult().isFailure()
        || head.status().code() == 101
        || state.responseStarted()) {
      ReferenceCountUtil.release(head);
      attempt.endedBy("error");
      fail();
      return;
    }
    HttpMessages.stripHopByHop(head.headers());
    // An intermediary speaks its own HTTP version on each hop (RFC 9110 section 6.2).
    head.setProtocolVersion(HttpVersion.HTTP_1_1);
    int code = head.status().code();
    if (code >= 100 && code < 200) {
      // Informational: relayed as it is; its empty end follows at once and keeps the state.
      response.forward(head);
      return;
    }
    boolean bodyless = headRequest || code == 204 || code == 304;
    boolean framed =
        bodyless || HttpUtil.isContentLengthSet(head) || HttpUtil.isTransferEncodingChunked(head);
    if (!framed && clientHttp11) {
      // A body delimited by the upstream's close: re-frame it in chunks so the client
      // connection can stay open.
      HttpUtil.setTransferEncodingChunked(head, true);
    } else if (!framed) {
      // An HTTP/1.0 client knows no chunks: the close delimits the body, as upstream.
      keepAlive = false;
    }
    if (!keepAlive) {
      head.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
    }
    response.forward(head);
    moveTo(
        state == ForwardState.SENDING
            ? ForwardState.SENDING_AND_RECEIVING
            : ForwardState.RECEIVING);
  }

  private void content(HttpContent content) {
    if (content.decoderResult().isFailure()) {
      content.release();
      attempt.endedBy("error");
      fail();
      return;
    }
    attempt.countDown(content.content().readableBytes());
    boolean last = content instanceof LastHttpContent;
    if (!state.responseStarted()) {
      if (!last) {
        // Only an informational response comes before the final head, and it has no body.
        content.release();
        attempt.endedBy("error");
        fail();
        return;
      }
      response.forward(content);
      response.flush();
      return;
    }
    if (!last) {
      response.forward(content);
      return;
    }
    if (state == ForwardState.SENDING_AND_RECEIVING) {
      // The rest of the request body would be read as the next request: close after this one.
      keepAlive = false;
    }
    moveTo(ForwardState.FINISHING);
    attempt.endedBy("complete");
    client
        .writeAndFlush(content)
        .addListener(
            (ChannelFutureListener)
                done -> {
                  moveTo(ForwardState.DONE);
                  attempt.allowEnded();
                  if (keepAlive && done.isSuccess()) {
                    owner.requestFinished(client.pipeline().context(ClientHandler.class));
                  } else {
                    client.close();
                  }
                });
  }

  private void upstreamClosed() {
    if (state.finished()) {
      return;
    }
    attempt.endedBy("upstream-closed");
    fail();
  }

  void clientClosed() {
    releaseHeld();
    if (state.finished()) {
      return;
    }
    attempt.endedBy("client-closed");
    fail();
  }

  /** Ends an allowed request that could not complete: the client learns by the close. */
  private void fail() {
    if (state.finished()) {
      return;
    }
    boolean responseStarted = state.responseStarted();
    moveTo(ForwardState.DONE);
    attempt.allowEnded();
    if (!responseStarted && client.isActive()) {
      // Nothing was sent to the client yet, so it still gets a proper answer.
      Refusals.badGateway(client);
      return;
    }
    client.close();
  }

  /** Refuses a request whose body turned out malformed. */
  private void abort(Reason reason, String detail) {
    boolean responseStarted = state.responseStarted();
    moveTo(ForwardState.DONE);
    owner.requestRefused();
    if (responseStarted) {
      attempt.deny(reason, detail);
      client.close();
    } else {
      Refusals.refuse(client, attempt, reason, detail);
    }
  }

  private void refuse(Reason reason, String detail) {
    moveTo(ForwardState.DONE);
    owner.requestRefused();
    Refusals.refuse(client, attempt, reason, detail);
  }

  /**
   * The one place the state changes. Entering a state sets whether the client's body is read (only
   * while it streams up) and, on {@code DONE}, releases the upstream, the timer and held parts.
   */
  private void moveTo(ForwardState next) {
    if (!state.successors().contains(next)) {
      throw new IllegalStateException(
          "forwarding to " + attempt.host() + ": no transition from " + state + " to " + next);
    }
    state = next;
    reading.want(next.readsClient());
    if (next == ForwardState.DONE) {
      release();
    }
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
    reading.feed(null);
    releaseHeld();
  }

  private void releaseHeld() {
    while (!held.isEmpty()) {
      held.poll().release();
    }
  }

  /** Sits on the upstream channel: its HTTP codec, and the reports it makes to the forwarder. */
  static final class UpstreamHandler extends ChannelInboundHandlerAdapter {
    private final HttpForwarder forwarder;

    UpstreamHandler(HttpForwarder forwarder) {
      this.forwarder = forwarder;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
      ctx.pipeline()
          .addBefore(
              ctx.name(),
              "codec",
              new HttpClientCodec(8192, forwarder.context.limits().maxHeaderBytes(), 8192));
    }

    private boolean current(ChannelHandlerContext ctx) {
      return forwarder.upstream == ctx.channel() && forwarder.state.readsResponse();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      if (!current(ctx)) {
        ReferenceCountUtil.release(msg);
        return;
      }
      if (msg instanceof HttpResponse head) {
        // This codec never emits a head with content in one message (no aggregator).
        forwarder.response(head);
      } else if (msg instanceof HttpContent content) {
        forwarder.content(content);
      } else {
        ReferenceCountUtil.release(msg);
      }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
      if (current(ctx)) {
        forwarder.response.flush();
      }
      ctx.fireChannelReadComplete();
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
      forwarder.reading.sinkWritabilityChanged();
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
