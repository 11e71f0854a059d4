package dev.agentsandbox.backend.docker;

import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import dev.agentsandbox.policy.net.Cidr;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.Inet4Address;
import java.net.InterfaceAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The subnet pool a backend takes when the operator names none: a range inside {@link #SPACE},
 * sized for the run limit, that nothing else uses. Docker's default address pools hold about 30
 * networks, 15 runs, fewer than the control plane's default run limit; so the backend carves its
 * own range instead, and checks it first:
 *
 * <ul>
 *   <li>no network of the daemon overlaps it, except this backend's own (labelled {@link
 *       Labels#MANAGED_BY} and not another control plane's {@link Labels#INSTANCE}), whose blocks
 *       the allocator skips one by one;
 *   <li>no address or route of this host overlaps it ({@code /proc/net/route} and the interfaces'
 *       addresses), except the bridges of those same networks: a range routed elsewhere (a VPN, a
 *       data-centre network) would be hidden from every run's proxy behind the run's bridge.
 * </ul>
 *
 * <p>The candidates are the aligned ranges of the needed size in {@link #SPACE}, lowest first. The
 * choice is made once per backend, at its first launch (or probe), and kept.
 */
final class AutomaticSubnets {
  /** Where automatic ranges come from; {@code serve --docker-subnet-pool CIDR} names another. */
  static final Cidr SPACE = Cidr.parse("10.214.0.0/15");

  /** Room beyond the blocks live runs hold: teardown lag, blocks the daemon set aside. */
  static final int HEADROOM = 2;

  /** The smallest automatic range: 16 blocks, 8 runs. */
  static final int LARGEST_PREFIX = 24;

  private static final Path ROUTES = Path.of("/proc/net/route");

  private AutomaticSubnets() {}

  /** One network the daemon has: its subnet and labels. */
  record DaemonNetwork(Cidr subnet, Map<String, String> labels) {
    DaemonNetwork {
      labels = Map.copyOf(labels);
    }
  }

  /**
   * The prefix length of a range that holds {@code runs} runs and {@code standbys} proxy-pool
   * standbys at once (two /28 blocks each), with {@value #HEADROOM} times that room.
   */
  static int prefixFor(int runs, int standbys) {
    long blocks = (long) SubnetPool.BLOCKS_PER_RUN * (runs + standbys) * HEADROOM;
    int bits = 64 - Long.numberOfLeadingZeros(Math.max(1, blocks - 1));
    return Math.min(LARGEST_PREFIX, SubnetPool.DEFAULT_BLOCK_PREFIX - bits);
  }

  /**
   * Chooses the range.
   *
   * @param instance this control plane's instance label, if it has one
   * @param daemon every network of the daemon
   * @param host this host's addresses and routes ({@link #hostRoutes()})
   * @throws UnableToLaunchSandboxException when every candidate is taken, naming what took them
   */
  static SubnetPool choose(
      int runs,
      int standbys,
      Optional<String> instance,
      List<DaemonNetwork> daemon,
      List<Cidr> host) {
    int prefix = prefixFor(runs, standbys);
    List<Cidr> ours = new ArrayList<>();
    List<Cidr> blocking = new ArrayList<>();
    for (DaemonNetwork network : daemon) {
      (shareable(network.labels(), instance) ? ours : blocking).add(network.subnet());
    }
    for (Cidr route : host) {
      if (!ours.contains(route)) {
        blocking.add(route);
      }
    }
    long size = 1L << (32 - prefix);
    long first = SubnetPool.toLong(SPACE.network());
    long end = first + (1L << (32 - SPACE.prefixLength()));
    for (long start = first; start + size <= end; start += size) {
      Cidr candidate = Cidr.parse(SubnetPool.format(start) + "/" + prefix);
      if (blocking.stream().filter(c -> !c.isIpv6()).noneMatch(candidate::overlaps)) {
        return new SubnetPool(candidate, SubnetPool.DEFAULT_BLOCK_PREFIX);
      }
    }
    throw new UnableToLaunchSandboxException(
        "choosing a subnet pool for "
            + runs
            + " runs in "
            + SPACE
            + ": every /"
            + prefix
            + " in it overlaps a network of the daemon or a route of this host ("
            + blocking.stream().filter(c -> !c.isIpv6() && c.overlaps(SPACE)).limit(8).toList()
            + ") (give serve a free private range with --docker-subnet-pool CIDR)");
  }

  /**
   * Whether a daemon network's blocks may be shared with this backend's: it is this project's, and
   * not another control plane's (the reaper's rule of ownership, {@link DockerReaper}).
   */
  static boolean shareable(Map<String, String> labels, Optional<String> instance) {
    if (!Labels.MANAGER.equals(labels.get(Labels.MANAGED_BY))) {
      return false;
    }
    String owner = labels.get(Labels.INSTANCE);
    return owner == null || instance.isEmpty() || owner.equals(instance.get());
  }

  /**
   * This host's IPv4 routes other than the default route, and the networks of its interfaces' IPv4
   * addresses. Where {@code /proc/net/route} does not exist (not Linux), the interfaces alone.
   */
  static List<Cidr> hostRoutes() {
    List<Cidr> found = new ArrayList<>();
    if (Files.isReadable(ROUTES)) {
      try {
        found.addAll(parseRoutes(Files.readAllLines(ROUTES)));
      } catch (IOException e) {
        throw new UncheckedIOException("reading this host's routes from " + ROUTES, e);
      }
    }
    try {
      for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
        for (InterfaceAddress address : nic.getInterfaceAddresses()) {
          if (address.getAddress() instanceof Inet4Address v4 && !v4.isLoopbackAddress()) {
            found.add(network(SubnetPool.toLong(v4), address.getNetworkPrefixLength()));
          }
        }
      }
    } catch (SocketException e) {
      throw new UncheckedIOException(
          new IOException("listing this host's network interfaces: " + e.getMessage(), e));
    }
    return found;
  }

  /**
   * The routes of a {@code /proc/net/route} table: destination and mask in hex, little-endian, as
   * the kernel prints them; the default route (mask 0) is left out.
   */
  static List<Cidr> parseRoutes(List<String> lines) {
    List<Cidr> routes = new ArrayList<>();
    for (String line : lines.subList(Math.min(1, lines.size()), lines.size())) {
      String[] fields = line.trim().split("\\s+");
      if (fields.length < 8) {
        continue;
      }
      long destination = littleEndian(fields[1]);
      long mask = littleEndian(fields[7]);
      if (destination < 0 || mask <= 0) {
        continue;
      }
      routes.add(network(destination, Long.bitCount(mask)));
    }
    return routes;
  }

  private static long littleEndian(String hex) {
    if (!hex.matches("[0-9A-Fa-f]{8}")) {
      return -1;
    }
    long value = Long.parseLong(hex, 16);
    return ((value & 0xff) << 24)
        | ((value & 0xff00) << 8)
        | ((value >> 8) & 0xff00)
        | ((value >> 24) & 0xff);
  }

  private static Cidr network(long address, int prefix) {
    long mask = prefix == 0 ? 0 : (0xffffffffL << (32 - prefix)) & 0xffffffffL;
    return Cidr.parse(SubnetPool.format(address & mask) + "/" + prefix);
  }
}
