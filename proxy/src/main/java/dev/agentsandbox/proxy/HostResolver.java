package dev.agentsandbox.proxy;

import io.netty.channel.EventLoop;
import io.netty.util.concurrent.Future;
import java.net.InetAddress;
import java.util.List;

/**
 * Turns a canonical host name into its addresses. The proxy calls it only for names the policy
 * already allowed, which is what makes "refused before any DNS lookup" testable: a test resolver
 * records every call.
 */
public interface HostResolver extends AutoCloseable {
  /**
   * Resolves the name; the future fails when the name has no address or the lookup timed out. The
   * future's listeners may run on another thread than {@code eventLoop}.
   */
  Future<List<InetAddress>> resolve(String canonicalHost, EventLoop eventLoop);

  @Override
  default void close() {}
}
