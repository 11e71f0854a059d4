package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.net.AddressPolicy;
import dev.agentsandbox.policy.net.EgressDecider;
import dev.agentsandbox.policy.net.InternalRanges;
import dev.agentsandbox.policy.net.Reason;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpResponseEncoder;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The running proxy: one listening socket and a small group of event loops serving every client and
 * upstream connection (no thread per connection). Start it with {@link #start}, stop it with {@link
 * #close}.
 */
public final class ProxyServer implements AutoCloseable {
  static final String DECODER = "decoder";
  static final String ENCODER = "encoder";
  static final String CLIENT_HANDLER = "client";

  /** 32 KiB high / 8 KiB low per side: a tunnel never buffers much before reading pauses. */
  private static final WriteBufferWaterMark WATER_MARK =
      new WriteBufferWaterMark(8 * 1024, 32 * 1024);

  private final EventLoopGroup group;
  private final Channel serverChannel;
  private final InetSocketAddress boundAddress;
  private final ContextHolder holder;
  private final Set<InetAddress> hostAddresses;

  private ProxyServer(
      EventLoopGroup group,
      Channel serverChannel,
      InetSocketAddress bound,
      ContextHolder holder,
      Set<InetAddress> hostAddresses) {
    this.group = group;
    this.serverChannel = serverChannel;
    this.boundAddress = bound;
    this.holder = holder;
    this.hostAddresses = hostAddresses;
  }

  /**
   * Binds and starts serving. Accepting begins only once the address policy knows the real
   * listening socket, so no connection is ever served without the loop check.
   *
   * @throws UnableToStartProxyException when the address cannot be bound
   */
  public static ProxyServer start(
      ProxyConfig config,
      HostResolver resolver,
      List<DecisionListener> listeners,
      ProxyMetrics metrics) {
    return bind(config, listeners, metrics, resolver, false);
  }

  /**
   * Binds and starts serving without a policy: every connection accepted before {@link
   * #applyPolicy} is refused ({@code policy-pending}) on its first request, nothing resolved or
   * dialled. Only the listening address, the limits, the decisions and the metrics of {@code fixed}
   * are used; its allow-list and resolver settings are not.
   *
   * @throws UnableToStartProxyException when the address cannot be bound
   */
  public static ProxyServer startAwaitingPolicy(
      ProxyConfig fixed, List<DecisionListener> listeners, ProxyMetrics metrics) {
    return bind(fixed, listeners, metrics, NO_RESOLVER, true);
  }

  /**
   * Puts the run's policy in force for every connection accepted from now on, in one volatile
   * write: a connection accepted before keeps the pending state it was accepted in (and is
   * refused), so no request is ever decided by half of one state and half of the other. Only once.
   *
   * @throws IllegalStateException when a policy is already in force (a proxy serves one run)
   */
  public void applyPolicy(ProxyConfig policy, HostResolver resolver) {
    synchronized (holder) {
      ProxyContext pending = holder.context;
      if (!pending.awaitingPolicy()) {
        throw new IllegalStateException("a policy is already in force (a proxy serves one run)");
      }
      holder.context = serving(pending, policy, resolver, hostAddresses, boundAddress);
    }
  }

  /**
   * The context that serves {@code policy}: its decider, address policy, resolver and connector;
   * the decisions, metrics, limits and connection count of {@code from}, which this proxy keeps for
   * its whole life.
   */
  private static ProxyContext serving(
      ProxyContext from,
      ProxyConfig policy,
      HostResolver resolver,
      Set<InetAddress> hostAddresses,
      InetSocketAddress bound) {
    // The run's CA is made here, when the policy is put in force, and lives in this context only.
    Inspection inspection =
        policy
            .inspect()
            .map(i -> Inspection.create(i, policy.runId(), java.time.Instant.now()))
            .orElse(null);
    return new ProxyContext(
        new EgressDecider(policy.allow(), policy.instanceAllow()),
        new AddressPolicy(policy.internal(), hostAddresses, bound),
        resolver,
        from.decisions(),
        from.metrics(),
        from.limits(),
        policy.runId(),
        from.openConnections(),
        Connector.TCP,
        false,
        inspection);
  }

  /** The run CA's certificate (PEM) when the policy in force inspects hosts. */
  public Optional<String> caCertificatePem() {
    Inspection inspection = holder.context.inspection();
    return inspection == null ? Optional.empty() : Optional.of(inspection.caCertificatePem());
  }

  /** True until a policy is in force. */
  public boolean awaitingPolicy() {
    return holder.context.awaitingPolicy();
  }

  /** What a pending proxy "resolves" with: nothing; a pending connection never asks. */
  private static final HostResolver NO_RESOLVER =
      (host, loop) -> loop.newFailedFuture(new IllegalStateException("no policy in force yet"));

  /** What a pending proxy "connects" with: nothing; a pending connection never dials. */
  private static final Connector NO_CONNECTOR =
      (client, checked, handler, limits) ->
          client.newFailedFuture(new IllegalStateException("no policy in force yet"));

  private static ProxyServer bind(
      ProxyConfig config,
      List<DecisionListener> listeners,
      ProxyMetrics metrics,
      HostResolver resolver,
      boolean awaitingPolicy) {
    Limits limits = config.limits();
    EventLoopGroup group =
        new MultiThreadIoEventLoopGroup(
            limits.ioThreads(),
            new DefaultThreadFactory("agent-sandbox-proxy", true),
            NioIoHandler.newFactory());
    ContextHolder holder = new ContextHolder();
    Channel server;
    try {
      InetAddress listenAddress = InetAddress.getByName(config.listenHost());
      server =
          new ServerBootstrap()
              .group(group)
              .channel(NioServerSocketChannel.class)
              .option(ChannelOption.SO_BACKLOG, 1024)
              .option(ChannelOption.AUTO_READ, false)
              .childOption(ChannelOption.TCP_NODELAY, true)
              .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, WATER_MARK)
              .childHandler(new Initializer(holder))
              .bind(new InetSocketAddress(listenAddress, config.listenPort()))
              .syncUninterruptibly()
              .channel();
    } catch (Exception e) {
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      throw new UnableToStartProxyException(
          "listening on "
              + config.listenHost()
              + ":"
              + config.listenPort()
              + " failed: "
              + e.getMessage()
              + " (is the port taken, or the address not on this host?)",
          e);
    }
    InetSocketAddress bound = (InetSocketAddress) server.localAddress();
    Set<InetAddress> hostAddresses = hostAddresses();
    ProxyContext pending =
        new ProxyContext(
            new EgressDecider(AllowList.EMPTY, Optional.empty()),
            new AddressPolicy(InternalRanges.NONE, hostAddresses, bound),
            NO_RESOLVER,
            new DecisionLog(listeners, metrics),
            metrics,
            limits,
            config.runId(),
            new AtomicInteger(),
            NO_CONNECTOR,
            true);
    holder.context =
        awaitingPolicy ? pending : serving(pending, config, resolver, hostAddresses, bound);
    server.config().setAutoRead(true);
    return new ProxyServer(group, server, bound, holder, hostAddresses);
  }

  /** The address and real port the proxy listens on. */
  public InetSocketAddress boundAddress() {
    return boundAddress;
  }

  /** Stops accepting, closes every connection and releases the event loops. */
  @Override
  public void close() {
    serverChannel.close().syncUninterruptibly();
    holder.context.resolver().close();
    group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
  }

  /** The addresses of the proxy host's own interfaces, which are never dialled undeclared. */
  static Set<InetAddress> hostAddresses() {
    Set<InetAddress> addresses = new HashSet<>();
    try {
      for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
        addresses.addAll(Collections.list(nic.getInetAddresses()));
      }
    } catch (SocketException e) {
      throw new UnableToStartProxyException(
          "listing this host's network interfaces failed: " + e.getMessage(), e);
    }
    // Scoped IPv6 addresses compare with their scope; the policy compares bytes only.
    Set<InetAddress> plain = new HashSet<>();
    for (InetAddress address : addresses) {
      plain.add(dev.agentsandbox.policy.net.IpLiteral.toAddress(address.getAddress()));
    }
    return plain;
  }

  /**
   * Set after bind, before the first accept, and once more when an awaited policy arrives; read
   * once by every connection as it is accepted.
   */
  private static final class ContextHolder {
    private volatile ProxyContext context;
  }

  private static final class Initializer extends ChannelInitializer<SocketChannel> {
    private final ContextHolder holder;

    Initializer(ContextHolder holder) {
      this.holder = holder;
    }

    @Override
    public boolean isSharable() {
      return true;
    }

    @Override
    protected void initChannel(SocketChannel channel) {
      ProxyContext context = holder.context;
      Limits limits = context.limits();
      int open = context.openConnections().incrementAndGet();
      context.metrics().connectionOpened();
      channel
          .closeFuture()
          .addListener(
              f -> {
                context.openConnections().decrementAndGet();
                context.metrics().connectionClosed();
              });
      channel
          .pipeline()
          .addLast(
              "idle",
              new IdleStateHandler(0, 0, limits.idleTimeout().toMillis(), TimeUnit.MILLISECONDS))
          .addLast(DECODER, new StrictRequestDecoder(limits.maxHeaderBytes()))
          .addLast(ENCODER, new HttpResponseEncoder());
      if (open > limits.maxConnections()) {
        channel.config().setAutoRead(false);
        Attempt attempt = new Attempt(context, clientOf(channel), "-", "", 0);
        Refusals.refuse(
            channel,
            attempt,
            Reason.TOO_MANY_CONNECTIONS,
            "the proxy already serves " + limits.maxConnections() + " connections");
        return;
      }
      channel.pipeline().addLast(CLIENT_HANDLER, new ClientHandler(context));
    }

    private static String clientOf(SocketChannel channel) {
      InetSocketAddress remote = channel.remoteAddress();
      return remote == null
          ? "-"
          : dev.agentsandbox.policy.net.IpLiteral.format(remote.getAddress())
              + ":"
              + remote.getPort();
    }
  }
}
