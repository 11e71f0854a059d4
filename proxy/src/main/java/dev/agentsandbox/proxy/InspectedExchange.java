package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.http.RequestPath;
import dev.agentsandbox.policy.net.Reason;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.util.ArrayDeque;

/**
 * One request on an inspected host, inside the tunnel whose TLS the proxy terminated: checked
 * ({@link #start}) — its {@code Host} or {@code :authority} must name the tunnel's host, its path
 * must normalise unambiguously and pass the host's rules — then sent, with the path in its
 * normalised spelling and the injected credential (any header of that name the client sent removed
 * first), over one of the tunnel's upstream connections to the pinned address; the answer comes
 * back with the credential scrubbed. Every request is its own decision. The proxy never follows a
 * redirect: a {@code Location} goes to the client as it came, and whatever the client then asks for
 * is decided afresh. An explicit state machine ({@link ForwardState}, as {@link HttpForwarder});
 * confined to the client channel's event loop.
 */
final class InspectedExchange {
  /**
   * What the exchange tells the handler that reads its client (an HTTP/1.1 connection, a stream).
   */
  interface Owner {
    /** The answer is out; {@code keepOpen} says whether the client may send another request. */
    void finished(boolean keepOpen);

    /** The request was refused: nothing more is read from this client. */
    void refused();
  }

  private final InspectedTunnel tunnel;
  private final Channel client;
  private final Flow reading;
  private final Owner owner;
  private final Attempt attempt;
  private final boolean http2;
  private final ArrayDeque<HttpContent> held = new ArrayDeque<>();
  private ForwardState state = ForwardState.DECIDING;
  private UpstreamPool.Connection upstream;
  private Flow response;
  private HttpRequest outgoing;
  private Scrubber scrubber;
  private boolean keepAlive;
  private boolean clientHttp11;
  private boolean headRequest;
  private boolean upstreamKeepAlive;

  InspectedExchange(
      InspectedTunnel tunnel,
      Channel client,
      Flow reading,
      Owner owner,
      Attempt attempt,
      boolean http2) {
    this.tunnel = tunnel;
    this.client = client;
    this.reading = reading;
    this.owner = owner;
    this.attempt = attempt;
    this.http2 = http2;
  }

  ForwardState state() {
    return state;
  }

  boolean takesBody() {
    return state.takesRequestBody();
  }

  void endedBy(String cause) {
    attempt.endedBy(cause);
  }

  /** Decides the request head and, when it passes, asks the tunnel's pool for a connection. */
  void start(HttpRequest request) {
    LastHttpContent wholeBody = null;
    if (request instanceof FullHttpRequest full) {
      wholeBody = new DefaultLastHttpContent(full.content().retainedDuplicate());
    }
    try {
      decide(request);
    } finally {
      ReferenceCountUtil.release(request);
    }
    if (wholeBody != null) {
      if (state.takesRequestBody()) {
        body(wholeBody);
      } else {
        wholeBody.release();
      }
    }
  }

  private void decide(HttpRequest request) {
    Inspection.Route route = tunnel.route();
    if (request.decoderResult().isFailure()) {
      Throwable cause = request.decoderResult().cause();
      if (cause instanceof TooLongFrameException) {
        refuse(Reason.HEADER_TOO_LARGE, "the request head is larger than the proxy's limit");
      } else {
        refuse(Reason.BAD_REQUEST, "malformed request: " + ClientHandler.describe(cause));
      }
      return;
    }
    HttpMethod method = request.method();
    String framing = HttpMessages.framingProblem(request.headers());
    if (framing != null) {
      refuse(Reason.BAD_REQUEST, framing);
      return;
    }
    if (!http2 && HttpMessages.isUpgrade(request.headers())) {
      refuse(Reason.UPGRADE_REFUSED, "protocol upgrades (WebSocket, h2c) are not proxied");
      return;
    }
    String authority =
        InspectedHead.authorityProblem(request.headers(), route.host(), tunnel.port());
    if (authority != null) {
      refuse(Reason.AUTHORITY_MISMATCH, authority);
      return;
    }
    Inspection.Verdict verdict = route.check(method.name(), request.uri());
    verdict.path().ifPresent(p -> attempt.path(p.path()));
    if (verdict.refusal().isPresent()) {
      refuse(verdict.refusal().get(), verdict.detail());
      return;
    }
    RequestPath path = verdict.path().orElseThrow();
    keepAlive = http2 || HttpUtil.isKeepAlive(request);
    clientHttp11 = http2 || request.protocolVersion().equals(HttpVersion.HTTP_1_1);
    headRequest = HttpMethod.HEAD.equals(method);
    outgoing = InspectedHead.outgoing(request, path, route, tunnel.port(), http2);
    route
        .injected()
        .ifPresent(
            injected -> {
              attempt.credential(injected.injection().credential());
              scrubber = new Scrubber(injected.secret());
            });
    moveTo(ForwardState.CONNECTING);
    tunnel.pool().acquire(this::connected, this::acquireFailed);
  }

  /** A part of the request body, while {@link #takesBody()}. */
  void body(HttpContent content) {
    if (!state.takesRequestBody()) {
      content.release();
      return;
    }
    if (content.decoderResult().isFailure()) {
      content.release();
      abort(
          Reason.BAD_REQUEST,
          "malformed body: " + ClientHandler.describe(content.decoderResult().cause()));
      return;
    }
    attempt.countUp(content.content().readableBytes());
    tunnel.attempt().countUp(content.content().readableBytes());
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

  private void connected(UpstreamPool.Connection connection) {
    if (state == ForwardState.DONE || !client.isActive()) {
      connection.pool().release(connection, true);
      return;
    }
    upstream = connection;
    connection.attach(this);
    Channel channel = connection.channel;
    channel.write(outgoing, channel.voidPromise());
    while (!held.isEmpty()) {
      channel.write(held.poll(), channel.voidPromise());
    }
    channel.flush();
    reading.feed(channel);
    response = new Flow(channel, client);
    response.want(true);
    moveTo(
        state == ForwardState.CONNECTING ? ForwardState.SENDING : ForwardState.AWAITING_RESPONSE);
  }

  private void acquireFailed(Reason reason, String detail) {
    if (state != ForwardState.DONE) {
      refuse(reason, detail);
    }
  }

  void upstreamRead(Object msg) {
    if (!state.readsResponse()) {
      ReferenceCountUtil.release(msg);
      return;
    }
    if (msg instanceof HttpResponse head) {
      response(head);
    } else if (msg instanceof HttpContent content) {
      content(content);
    } else {
      ReferenceCountUtil.release(msg);
    }
  }

  void upstreamReadComplete() {
    if (response != null && state.readsResponse()) {
      response.flush();
    }
  }

  void upstreamWritabilityChanged() {
    reading.sinkWritabilityChanged();
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
    int code = head.status().code();
    if (code >= 200) {
      upstreamKeepAlive = HttpUtil.isKeepAlive(head);
    }
    HttpMessages.stripHopByHop(head.headers());
    head.setProtocolVersion(HttpVersion.HTTP_1_1);
    if (scrubber != null) {
      String encoding = head.headers().get(HttpHeaderNames.CONTENT_ENCODING);
      if (encoding != null && !encoding.equalsIgnoreCase("identity")) {
        // Asked for identity, answered compressed: a credential inside could not be scrubbed.
        ReferenceCountUtil.release(head);
        attempt.endedBy("error");
        fail();
        return;
      }
      scrubber.headers(head.headers());
    }
    if (code < 200) {
      response.forward(head);
      return;
    }
    attempt.status(code);
    boolean bodyless = headRequest || code == 204 || code == 304;
    boolean framed =
        bodyless || HttpUtil.isContentLengthSet(head) || HttpUtil.isTransferEncodingChunked(head);
    if (!framed) {
      upstreamKeepAlive = false;
      if (http2) {
        head.headers().remove(HttpHeaderNames.TRANSFER_ENCODING);
      } else if (clientHttp11) {
        HttpUtil.setTransferEncodingChunked(head, true);
      } else {
        keepAlive = false;
      }
    }
    if (!keepAlive && !http2) {
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
    boolean last = content instanceof LastHttpContent;
    attempt.countDown(content.content().readableBytes());
    tunnel.attempt().countDown(content.content().readableBytes());
    HttpContent out = content;
    if (scrubber != null) {
      if (last) {
        HttpHeaders trailers = ((LastHttpContent) content).trailingHeaders().copy();
        scrubber.headers(trailers);
        DefaultLastHttpContent end =
            new DefaultLastHttpContent(
                scrubber.body(content.content().retain(), true, client.alloc()));
        end.trailingHeaders().set(trailers);
        content.release();
        out = end;
      } else {
        out =
            new DefaultHttpContent(
                scrubber.body(content.content().retain(), false, client.alloc()));
        content.release();
      }
    }
    if (!state.responseStarted()) {
      if (!last) {
        out.release();
        attempt.endedBy("error");
        fail();
        return;
      }
      response.forward(out);
      response.flush();
      return;
    }
    if (!last) {
      response.forward(out);
      return;
    }
    boolean reusable = upstreamKeepAlive && state == ForwardState.RECEIVING;
    if (state == ForwardState.SENDING_AND_RECEIVING && !http2) {
      // The rest of the request body would be read as the next request: close after this one.
      keepAlive = false;
    }
    moveTo(ForwardState.FINISHING);
    UpstreamPool.Connection done = upstream;
    upstream = null;
    reading.feed(null);
    done.pool().release(done, reusable);
    attempt.endedBy("complete");
    client
        .writeAndFlush(out)
        .addListener(
            (ChannelFutureListener)
                written -> {
                  moveTo(ForwardState.DONE);
                  attempt.allowEnded();
                  owner.finished(keepAlive && written.isSuccess());
                });
  }

  void upstreamClosed() {
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

  /** Ends an allowed request that could not complete: the client learns by a 502 or the close. */
  private void fail() {
    if (state.finished()) {
      return;
    }
    boolean responseStarted = state.responseStarted();
    moveTo(ForwardState.DONE);
    attempt.allowEnded();
    owner.refused();
    if (!responseStarted && client.isActive()) {
      Refusals.badGateway(client);
      return;
    }
    client.close();
  }

  private void abort(Reason reason, String detail) {
    boolean responseStarted = state.responseStarted();
    moveTo(ForwardState.DONE);
    owner.refused();
    if (responseStarted) {
      attempt.deny(reason, detail);
      client.close();
    } else {
      Refusals.refuse(client, attempt, reason, detail);
    }
  }

  private void refuse(Reason reason, String detail) {
    moveTo(ForwardState.DONE);
    owner.refused();
    Refusals.refuse(client, attempt, reason, detail);
  }

  private void moveTo(ForwardState next) {
    if (!state.successors().contains(next)) {
      throw new IllegalStateException(
          "inspecting " + tunnel.route().host() + ": no transition from " + state + " to " + next);
    }
    state = next;
    reading.want(next.readsClient());
    if (next == ForwardState.DONE) {
      if (upstream != null) {
        // Ended mid-exchange: the connection's framing is unknown, so it is not reused.
        UpstreamPool.Connection dropped = upstream;
        upstream = null;
        dropped.pool().release(dropped, false);
      }
      reading.feed(null);
      releaseHeld();
    }
  }

  private void releaseHeld() {
    while (!held.isEmpty()) {
      held.poll().release();
    }
  }
}
