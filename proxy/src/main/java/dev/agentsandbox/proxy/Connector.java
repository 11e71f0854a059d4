package dev.agentsandbox.proxy;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelOption;
import java.net.InetSocketAddress;

/**
 * Opens the upstream connection to an address that passed every check. The seam between the proxy's
 * logic and its sockets: production uses {@link #TCP}; the forwarder's state tests use an in-memory
 * channel.
 */
@FunctionalInterface
interface Connector {
  /** A TCP connection on the client's event loop, reading off until the handler turns it on. */
  Connector TCP =
      (client, checked, handler, limits) ->
          new Bootstrap()
              .group(client.eventLoop())
              .channel(client.getClass().asSubclass(Channel.class))
              .option(
                  ChannelOption.CONNECT_TIMEOUT_MILLIS,
                  (int) Math.min(Integer.MAX_VALUE, limits.connectTimeout().toMillis()))
              .option(ChannelOption.AUTO_READ, false)
              .option(ChannelOption.TCP_NODELAY, true)
              .handler(handler)
              .connect(checked);

  /** Connects to exactly {@code checked}, with {@code handler} on the new channel. */
  ChannelFuture connect(
      Channel client, InetSocketAddress checked, ChannelHandler handler, Limits limits);
}
