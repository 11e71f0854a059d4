package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.net.AddressCheck;
import dev.agentsandbox.policy.net.AddressPolicy;
import dev.agentsandbox.policy.net.IpLiteral;
import dev.agentsandbox.policy.net.Reason;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ConnectTimeoutException;
import io.netty.util.concurrent.Future;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.function.Consumer;

/**
 * Steps 6 and 7: resolve an allowed name, check every answer, and connect to exactly the address
 * that passed — the {@link InetSocketAddress} is built from the checked {@link InetAddress}, so no
 * second lookup can happen. Any failure is answered with a refusal on the client channel, after
 * which {@code onRefused} runs.
 */
final class Dialer {
  private Dialer() {}

  static void dial(
      ProxyContext context,
      Channel client,
      Attempt attempt,
      ChannelHandler upstreamHandler,
      Consumer<Channel> onConnected,
      Runnable onRefused) {
    String host = attempt.host();
    int port = attempt.port();
    Future<List<InetAddress>> lookup = context.resolver().resolve(host, client.eventLoop());
    lookup.addListener(
        (Future<List<InetAddress>> done) -> {
          if (!client.isActive()) {
            return;
          }
          if (!done.isSuccess()) {
            Refusals.refuse(client, attempt, Reason.DNS_FAILURE, "the name did not resolve");
            onRefused.run();
            return;
          }
          AddressPolicy.Choice choice = context.addresses().choose(host, done.getNow(), port);
          if (choice.chosen().isEmpty()) {
            AddressCheck refused = choice.firstRefused().orElseThrow();
            attempt.address(IpLiteral.format(refused.address()));
            Refusals.refuse(
                client,
                attempt,
                Reason.NON_PUBLIC_ADDRESS,
                "it resolves to "
                    + IpLiteral.format(refused.address())
                    + ", which is "
                    + refused.addressClass().wireName());
            onRefused.run();
            return;
          }
          InetAddress checked = choice.chosen().get().address();
          attempt.address(IpLiteral.format(checked));
          connect(context, client, attempt, checked, port, upstreamHandler, onConnected, onRefused);
        });
  }

  private static void connect(
      ProxyContext context,
      Channel client,
      Attempt attempt,
      InetAddress checked,
      int port,
      ChannelHandler upstreamHandler,
      Consumer<Channel> onConnected,
      Runnable onRefused) {
    ChannelFuture connecting =
        context
            .connector()
            .connect(
                client, new InetSocketAddress(checked, port), upstreamHandler, context.limits());
    connecting.addListener(
        (ChannelFuture done) -> {
          if (done.isSuccess()) {
            onConnected.accept(done.channel());
            return;
          }
          if (!client.isActive()) {
            return;
          }
          if (done.cause() instanceof ConnectTimeoutException) {
            Refusals.refuse(
                client,
                attempt,
                Reason.CONNECT_TIMEOUT,
                "no answer within " + context.limits().connectTimeout().toMillis() + " ms");
          } else {
            Refusals.refuse(
                client, attempt, Reason.CONNECT_FAILED, "the upstream refused the connection");
          }
          onRefused.run();
        });
  }
}
