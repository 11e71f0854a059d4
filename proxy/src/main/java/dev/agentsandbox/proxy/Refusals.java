package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.net.Reason;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;

/**
 * The proxy's refusal answer, in one place: a status for the reason, a short text body naming the
 * host and the reason, {@code X-Agent-Sandbox-Denied: <reason>}, then the connection is ended so
 * nothing pipelined behind a refused request goes anywhere (half-closed, the rest of the client's
 * input dropped up to a bound, then closed: {@link LingeringClose}).
 */
final class Refusals {
  /** The header every refusal carries; its value is the reason's wire name. */
  static final String DENIED_HEADER = "X-Agent-Sandbox-Denied";

  private Refusals() {}

  /** The status a refusal for this reason answers with. */
  static HttpResponseStatus status(Reason reason) {
    return switch (reason) {
      case INVALID_TARGET, BAD_REQUEST -> HttpResponseStatus.BAD_REQUEST;
      case HEADER_TOO_LARGE -> HttpResponseStatus.REQUEST_HEADER_FIELDS_TOO_LARGE;
      case TOO_MANY_CONNECTIONS -> HttpResponseStatus.SERVICE_UNAVAILABLE;
      case CONNECT_TIMEOUT -> HttpResponseStatus.GATEWAY_TIMEOUT;
      case CONNECT_FAILED, UPSTREAM_CERTIFICATE, UPSTREAM_TLS -> HttpResponseStatus.BAD_GATEWAY;
      default -> HttpResponseStatus.FORBIDDEN;
    };
  }

  /** Reports the refusal, answers it through the channel's HTTP encoder and closes the channel. */
  static void refuse(Channel client, Attempt attempt, Reason reason, String detail) {
    attempt.deny(reason, detail);
    String host = attempt.host().isEmpty() ? "(no host)" : attempt.host();
    String body =
        "agent-sandbox proxy refused "
            + host
            + (attempt.port() > 0 ? ":" + attempt.port() : "")
            + ": "
            + reason.wireName()
            + (detail == null || detail.isEmpty() ? "" : " (" + detail + ")")
            + "\n";
    ByteBuf content = client.alloc().buffer(body.length());
    content.writeCharSequence(body, StandardCharsets.UTF_8);
    FullHttpResponse response =
        new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status(reason), content);
    response
        .headers()
        .set(HttpHeaderNames.CONTENT_TYPE, "text/plain; charset=utf-8")
        .setInt(HttpHeaderNames.CONTENT_LENGTH, content.readableBytes())
        .set(DENIED_HEADER, reason.wireName())
        .set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
    if (client.isActive()) {
      // Over the connection cap the connection goes at once; every other refusal lingers so that a
      // client still sending its body reads the answer instead of a reset (LingeringClose).
      ChannelFutureListener then =
          reason == Reason.TOO_MANY_CONNECTIONS
              ? ChannelFutureListener.CLOSE
              : sent -> {
                if (sent.isSuccess()) {
                  LingeringClose.start(client);
                } else {
                  client.close();
                }
              };
      client.writeAndFlush(response).addListener(then);
    } else {
      response.release();
    }
  }

  /**
   * Answers 502 for an allowed request whose upstream failed before answering. It is no refusal, so
   * it carries no denied header; the decision was already reported as an allow.
   */
  static void badGateway(Channel client) {
    byte[] body =
        "agent-sandbox proxy: the upstream closed before answering\n"
            .getBytes(StandardCharsets.UTF_8);
    FullHttpResponse response =
        new DefaultFullHttpResponse(
            HttpVersion.HTTP_1_1,
            HttpResponseStatus.BAD_GATEWAY,
            client.alloc().buffer(body.length).writeBytes(body));
    response
        .headers()
        .set(HttpHeaderNames.CONTENT_TYPE, "text/plain; charset=utf-8")
        .setInt(HttpHeaderNames.CONTENT_LENGTH, body.length)
        .set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
    client.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
  }
}
