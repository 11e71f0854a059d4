package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.HostName;
import dev.agentsandbox.policy.InvalidHostException;
import dev.agentsandbox.policy.net.Reason;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.ssl.AbstractSniHandler;
import io.netty.handler.ssl.NotSslRecordException;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Reads the TLS ClientHello at the start of a tunnel to port 443 and lets it through only when its
 * server name (SNI) is the CONNECT target: a different name is domain fronting (the CDN at the
 * allowed name's address would route to the fronted host), and no server name at all (or no TLS) is
 * refused too, because the upstream would then pick a virtual host the policy never saw. The
 * ClientHello bytes stay buffered and flow on unchanged once the check passes.
 */
final class SniGuard extends AbstractSniHandler<Boolean> {
  /** Large enough for post-quantum key shares, small enough to bound per-tunnel memory. */
  private static final int MAX_CLIENT_HELLO = 64 * 1024;

  private final Channel upstream;
  private final Attempt attempt;
  private final boolean requireTls;
  private final long timeoutMillis;
  private boolean sawTls;
  private ScheduledFuture<?> timeout;

  /**
   * Guards a tunnel; {@code requireTls} refuses one whose first bytes are not a ClientHello. A
   * client that sends nothing within {@code timeoutMillis} is disconnected.
   */
  SniGuard(Channel upstream, Attempt attempt, boolean requireTls, long timeoutMillis) {
    // Netty's own timeout is off (0): it is not cancelled when the channel closes, so it would
    // keep every closed tunnel reachable until it fires. This one is cancelled on removal.
    super(MAX_CLIENT_HELLO, 0);
    this.upstream = upstream;
    this.attempt = attempt;
    this.requireTls = requireTls;
    this.timeoutMillis = timeoutMillis;
  }

  @Override
  public void handlerAdded(ChannelHandlerContext ctx) throws Exception {
    super.handlerAdded(ctx);
    timeout =
        ctx.executor()
            .schedule(
                () -> {
                  // A silent client could otherwise wait out the check and send TLS later.
                  attempt.endedBy("idle-timeout");
                  ctx.close();
                  upstream.close();
                },
                timeoutMillis,
                TimeUnit.MILLISECONDS);
  }

  @Override
  protected void handlerRemoved0(ChannelHandlerContext ctx) throws Exception {
    if (timeout != null) {
      timeout.cancel(false);
      timeout = null;
    }
    super.handlerRemoved0(ctx);
  }

  @Override
  protected Future<Boolean> lookup(ChannelHandlerContext ctx, io.netty.buffer.ByteBuf clientHello)
      throws Exception {
    // Netty passes null when the first bytes are not a TLS handshake record.
    sawTls = clientHello != null;
    return super.lookup(ctx, clientHello);
  }

  @Override
  protected Future<Boolean> lookup(ChannelHandlerContext ctx, String hostname) {
    boolean passes = sawTls ? matches(hostname) : !requireTls;
    return ctx.executor().newSucceededFuture(passes);
  }

  @Override
  protected void onLookupComplete(
      ChannelHandlerContext ctx, String hostname, Future<Boolean> future) {
    if (Boolean.TRUE.equals(future.getNow())) {
      ctx.pipeline().remove(this);
      return;
    }
    if (hostname == null) {
      attempt.deny(
          Reason.SNI_MISSING,
          "the tunnel did not start with a TLS ClientHello naming " + attempt.host());
    } else {
      attempt.deny(
          Reason.SNI_MISMATCH,
          "the TLS server name "
              + "'"
              + Echo.of(hostname)
              + "'"
              + " is not the CONNECT target "
              + attempt.host());
    }
    ctx.close();
    upstream.close();
  }

  /**
   * Two first records Netty's reader refuses on its own: a ClientHello larger than {@link
   * #MAX_CLIENT_HELLO} ({@link TooLongFrameException}) and an alert or application-data record that
   * is no TLS record at all ({@link NotSslRecordException}). For either, Netty drops the bytes,
   * closes the tunnel and throws; no server name was read, so the tunnel is refused as one without
   * a readable ClientHello, with its decision, instead of the exception ending an allowed tunnel as
   * an error with no refusal in the audit (both found by fuzzing: {@code ProxyFuzzTest} and {@code
   * RequestHeadFuzzTest}). Handled here rather than in {@code exceptionCaught}: Netty closes the
   * channel before it throws, and a pipeline torn down at once (as an in-memory one is) would pass
   * the exception on to the next handler instead.
   */
  @Override
  protected void decode(
      ChannelHandlerContext ctx, io.netty.buffer.ByteBuf in, java.util.List<Object> out)
      throws Exception {
    try {
      super.decode(ctx, in, out);
    } catch (TooLongFrameException tooLong) {
      refuseUnread(
          ctx,
          "the TLS ClientHello is larger than "
              + MAX_CLIENT_HELLO
              + " bytes, so its server name cannot be checked against "
              + attempt.host());
    } catch (NotSslRecordException notTls) {
      refuseUnread(ctx, "the tunnel did not start with a TLS ClientHello naming " + attempt.host());
    }
  }

  private void refuseUnread(ChannelHandlerContext ctx, String detail) {
    attempt.deny(Reason.SNI_MISSING, detail);
    ctx.close();
    upstream.close();
  }

  private boolean matches(String hostname) {
    if (hostname == null) {
      return false;
    }
    try {
      return HostName.canonicalTargetHost(hostname).equals(attempt.host());
    } catch (InvalidHostException e) {
      return false;
    }
  }
}
