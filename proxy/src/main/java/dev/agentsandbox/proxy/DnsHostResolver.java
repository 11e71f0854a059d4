package dev.agentsandbox.proxy;

import io.netty.channel.EventLoop;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.resolver.ResolvedAddressTypes;
import io.netty.resolver.dns.DnsNameResolver;
import io.netty.resolver.dns.DnsNameResolverBuilder;
import io.netty.resolver.dns.SingletonDnsServerAddressStreamProvider;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.ScheduledFuture;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Resolves names with Netty's asynchronous DNS client, one resolver per event loop (created on
 * first use), so a lookup never blocks an event loop and never needs a thread of its own.
 *
 * <p>Names are resolved as absolute names (a trailing dot is appended) so the system's search
 * domains are never tried: in a Kubernetes pod {@code api.vendor.com} would otherwise first be
 * asked as {@code api.vendor.com.<namespace>.svc.cluster.local}, a name nobody allowed.
 *
 * <p>Thread-safe.
 */
public final class DnsHostResolver implements HostResolver {
  private final Duration timeout;
  private final Optional<InetSocketAddress> server;
  private final Map<EventLoop, DnsNameResolver> resolvers = new ConcurrentHashMap<>();

  /**
   * Resolves with the system's name servers, or only {@code server} when given, failing a lookup
   * after {@code timeout} in all.
   */
  public DnsHostResolver(Duration timeout, Optional<InetSocketAddress> server) {
    this.timeout = timeout;
    this.server = server;
  }

  @Override
  public Future<List<InetAddress>> resolve(String canonicalHost, EventLoop eventLoop) {
    DnsNameResolver resolver = resolvers.computeIfAbsent(eventLoop, this::newResolver);
    Promise<List<InetAddress>> promise = eventLoop.newPromise();
    ScheduledFuture<?> timer =
        eventLoop.schedule(
            () ->
                promise.tryFailure(
                    new UnknownHostException(
                        "resolving "
                            + canonicalHost
                            + " timed out after "
                            + timeout.toMillis()
                            + " ms")),
            timeout.toMillis(),
            TimeUnit.MILLISECONDS);
    resolver
        .resolveAll(canonicalHost + ".")
        .addListener(
            (Future<List<InetAddress>> done) -> {
              timer.cancel(false);
              if (done.isSuccess() && !done.getNow().isEmpty()) {
                promise.trySuccess(List.copyOf(done.getNow()));
              } else {
                promise.tryFailure(
                    done.cause() != null
                        ? done.cause()
                        : new UnknownHostException(canonicalHost + " has no address"));
              }
            });
    return promise;
  }

  private DnsNameResolver newResolver(EventLoop eventLoop) {
    DnsNameResolverBuilder builder =
        new DnsNameResolverBuilder(eventLoop)
            .datagramChannelType(NioDatagramChannel.class)
            .queryTimeoutMillis(timeout.toMillis())
            .resolvedAddressTypes(ResolvedAddressTypes.IPV4_PREFERRED)
            .maxQueriesPerResolve(8);
    server.ifPresent(
        address ->
            builder.nameServerProvider(new SingletonDnsServerAddressStreamProvider(address)));
    return builder.build();
  }

  @Override
  public void close() {
    resolvers.values().forEach(DnsNameResolver::close);
    resolvers.clear();
  }
}
