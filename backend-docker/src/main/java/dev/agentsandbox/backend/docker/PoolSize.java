package dev.agentsandbox.backend.docker;

import java.util.function.IntSupplier;

/**
 * The size of a {@link ProxyPool}: given, or learnt once ({@code serve}'s automatic pool asks the
 * daemon for its host's memory, {@link ProxyPoolSizing}). Until an automatic size is learnt it is 0
 * and runs are built cold. Thread-safe.
 */
final class PoolSize {
  private final IntSupplier learn;
  private final boolean automatic;
  private volatile int current;
  private volatile boolean known;

  private PoolSize(IntSupplier learn, boolean automatic, int current, boolean known) {
    this.learn = learn;
    this.automatic = automatic;
    this.current = current;
    this.known = known;
  }

  /**
   * A given size.
   *
   * @throws IllegalArgumentException when it is not 0 to {@value ProxyPool#MAX_SIZE}
   */
  static PoolSize fixed(int size) {
    return new PoolSize(() -> size, false, checked(size), true);
  }

  /** A size {@code learn} answers when first asked; it may throw, and is asked again then. */
  static PoolSize learnt(IntSupplier learn) {
    return new PoolSize(learn, true, 0, false);
  }

  int current() {
    return current;
  }

  boolean known() {
    return known;
  }

  boolean automatic() {
    return automatic;
  }

  /** The size, learnt now if it was not; throws what learning it threw. */
  synchronized int resolve() {
    if (!known) {
      current = checked(learn.getAsInt());
      known = true;
    }
    return current;
  }

  private static int checked(int size) {
    if (size < 0 || size > ProxyPool.MAX_SIZE) {
      throw new IllegalArgumentException(
          "the proxy pool's size must be 0 (off) to " + ProxyPool.MAX_SIZE + ": " + size);
    }
    return size;
  }
}
