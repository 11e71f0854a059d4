package dev.agentsandbox.backend.docker;

import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import dev.agentsandbox.policy.net.Cidr;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Hands out blocks of a {@link SubnetPool} to runs' networks, each block to one network at a time.
 *
 * <p>A block is free when this allocator does not hold it and no network the daemon has overlaps
 * it: the daemon's networks are read on every allocation, so the subnets of networks left by a
 * control plane that crashed (until the reaper removes them), or created by anyone else, are never
 * handed out. A block the daemon still refuses as overlapping ({@link #refused}, another control
 * plane racing for the same range) is kept aside for a while. Thread-safe.
 */
final class SubnetAllocator {
  /** How long a block the daemon refused stays aside. */
  static final Duration REFUSED_FOR = Duration.ofMinutes(1);

  private final Supplier<SubnetPool> range;
  private final Supplier<List<AutomaticSubnets.DaemonNetwork>> daemonNetworks;
  private final Clock clock;
  private SubnetPool pool;
  private final BitSet held = new BitSet();
  private final Map<Integer, Instant> refused = new HashMap<>();

  /** Where the next search starts: blocks are used round the range, not the lowest first. */
  private int cursor;

  /** An allocator over the operator's {@code pool}. */
  SubnetAllocator(
      SubnetPool pool, Supplier<List<AutomaticSubnets.DaemonNetwork>> daemonNetworks, Clock clock) {
    this(() -> pool, daemonNetworks, clock);
  }

  /**
   * @param range the pool, asked once (at the first allocation or {@link #pool()}) and kept; it may
   *     throw, and is then asked again next time
   * @param daemonNetworks every network the daemon has now
   */
  SubnetAllocator(
      Supplier<SubnetPool> range,
      Supplier<List<AutomaticSubnets.DaemonNetwork>> daemonNetworks,
      Clock clock) {
    this.range = range;
    this.daemonNetworks = daemonNetworks;
    this.clock = clock;
  }

  /** The pool, chosen now if it was not yet. */
  synchronized SubnetPool pool() {
    if (pool == null) {
      pool = range.get();
    }
    return pool;
  }

  /** The pool if it was chosen already. */
  synchronized java.util.Optional<SubnetPool> poolIfChosen() {
    return java.util.Optional.ofNullable(pool);
  }

  /**
   * One block held for one network; {@link #release} it once the network is removed.
   *
   * @param subnet {@code address/prefix}
   * @param gateway the block's first host address, which Docker reserves for the bridge
   * @param firstMember the address after it: the first container's on the network (the proxy's)
   */
  record Block(int index, String subnet, String gateway, String firstMember) {}

  /**
   * Takes {@code count} free blocks at once.
   *
   * @throws UnableToLaunchSandboxException when the pool has fewer free blocks; nothing is held
   */
  List<Block> allocate(int count, String runId) {
    // Read the daemon's networks outside the lock: a block another thread takes meanwhile is held
    // here, and the daemon cannot have a network in it before this allocator handed it out.
    List<AutomaticSubnets.DaemonNetwork> seen = daemonNetworks.get();
    synchronized (this) {
      if (pool == null) {
        pool = range.get();
      }
      BitSet occupied =
          occupied(seen.stream().map(AutomaticSubnets.DaemonNetwork::subnet).toList());
      Instant now = clock.instant();
      refused.values().removeIf(until -> !until.isAfter(now));
      int blocks = pool.blocks();
      List<Block> taken = new ArrayList<>(count);
      for (int step = 0; step < blocks && taken.size() < count; step++) {
        int index = (cursor + step) % blocks;
        if (!held.get(index) && !occupied.get(index) && !refused.containsKey(index)) {
          taken.add(
              new Block(index, pool.subnet(index), pool.gateway(index), pool.firstMember(index)));
        }
      }
      if (taken.size() < count) {
        throw new UnableToLaunchSandboxException(
            "launching the sandbox of run "
                + runId
                + " on docker: the subnet pool "
                + pool.range()
                + " has no "
                + count
                + " free /"
                + pool.blockPrefix()
                + " blocks ("
                + held.cardinality()
                + " held by live runs, "
                + occupied.cardinality()
                + " overlapped by the daemon's other networks, "
                + refused.size()
                + " refused by the daemon, of "
                + blocks
                + "); wait for runs to end, or give serve a larger --docker-subnet-pool");
      }
      for (Block block : taken) {
        held.set(block.index());
      }
      cursor = (taken.get(taken.size() - 1).index() + 1) % blocks;
      return taken;
    }
  }

  /**
   * The daemon refused {@code block} as overlapping a network this allocator did not see: set it
   * aside for {@link #REFUSED_FOR} and release it.
   */
  synchronized void refused(Block block) {
    refused.put(block.index(), clock.instant().plus(REFUSED_FOR));
    held.clear(block.index());
  }

  /** The block's network is gone (or was never created): the block is free again. */
  synchronized void release(Block block) {
    held.clear(block.index());
  }

  /** How many blocks are held now. */
  synchronized int held() {
    return held.cardinality();
  }

  /** The indices of the pool's blocks that any of {@code subnets} overlaps. */
  private BitSet occupied(List<Cidr> subnets) {
    BitSet occupied = new BitSet();
    long first = pool.first();
    long last = first + (1L << (32 - pool.range().prefixLength())) - 1;
    int shift = 32 - pool.blockPrefix();
    for (Cidr subnet : subnets) {
      if (subnet.isIpv6()) {
        continue;
      }
      long start = SubnetPool.toLong(subnet.network());
      long end = start + (1L << (32 - subnet.prefixLength())) - 1;
      long from = Math.max(start, first);
      long to = Math.min(end, last);
      if (from > to) {
        continue;
      }
      occupied.set((int) ((from - first) >>> shift), (int) ((to - first) >>> shift) + 1);
    }
    return occupied;
  }
}
