package dev.agentsandbox.proxy;

import io.netty.channel.EventLoop;
import io.netty.util.concurrent.Future;
import java.net.InetAddress;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** Wraps a real resolver and records every name it was asked for, to prove what was not asked. */
final class RecordingResolver implements HostResolver {
  private final HostResolver delegate;
  private final List<String> lookups = new CopyOnWriteArrayList<>();

  RecordingResolver(HostResolver delegate) {
    this.delegate = delegate;
  }

  @Override
  public Future<List<InetAddress>> resolve(String canonicalHost, EventLoop eventLoop) {
    lookups.add(canonicalHost);
    return delegate.resolve(canonicalHost, eventLoop);
  }

  List<String> lookups() {
    return List.copyOf(lookups);
  }
}
