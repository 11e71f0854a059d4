package dev.agentsandbox.backend.docker;

import dev.agentsandbox.policy.net.Cidr;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;

/**
 * A range of private IPv4 addresses carved into equal blocks, one per network a run creates (see
 * {@link SubnetAllocator}): the operator's, or one the backend chose ({@link AutomaticSubnets});
 * never Docker's default address pools, which hold about 15 runs' pairs of networks and whose
 * addresses are only known once a network exists.
 *
 * @param range the operator's range, such as {@code 10.213.0.0/16}
 * @param blockPrefix the prefix length of each network's block (28: 16 addresses)
 */
public record SubnetPool(Cidr range, int blockPrefix) {
  /** The block each network gets by default: 16 addresses, the proxy and the workload need 2. */
  public static final int DEFAULT_BLOCK_PREFIX = 28;

  /** A run creates two networks: the fenced one and the way out. */
  static final int BLOCKS_PER_RUN = 2;

  /**
   * The only ranges a pool may come from: RFC 1918's private ranges and RFC 6598's shared range.
   * Docker routes a network's subnet to its bridge, so a pool in public space would hide those
   * public hosts from every run's proxy.
   */
  static final List<Cidr> PRIVATE =
      List.of(
          Cidr.parse("10.0.0.0/8"),
          Cidr.parse("172.16.0.0/12"),
          Cidr.parse("192.168.0.0/16"),
          Cidr.parse("100.64.0.0/10"));

  public SubnetPool {
    if (range.isIpv6()) {
      throw new IllegalArgumentException(
          range + " is an IPv6 range: runs' networks are IPv4 only (IPv6 is turned off on them)");
    }
    if (blockPrefix < 24 || blockPrefix > 29) {
      throw new IllegalArgumentException(
          "the block size /" + blockPrefix + " must be /24 to /29 (a /29 holds 5 hosts)");
    }
    if (range.prefixLength() > blockPrefix - 1) {
      throw new IllegalArgumentException(
          range
              + " is too small: it must hold at least "
              + BLOCKS_PER_RUN
              + " /"
              + blockPrefix
              + " blocks, one run's two networks (use /"
              + (blockPrefix - 1)
              + " or larger; /16 holds "
              + (1 << (blockPrefix - 16)) / BLOCKS_PER_RUN
              + " runs)");
    }
    if (PRIVATE.stream().noneMatch(p -> p.covers(range))) {
      throw new IllegalArgumentException(
          range
              + " is not private address space: Docker routes a network's subnet to its bridge, so"
              + " public hosts in it would be out of every run's reach; use a range inside"
              + " 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 or 100.64.0.0/10");
    }
  }

  /**
   * Parses an operator's {@code address/prefix}, such as {@code 10.213.0.0/16}, into a pool of /28
   * blocks.
   *
   * @throws IllegalArgumentException with a message naming what is wrong
   */
  public static SubnetPool parse(String text) {
    if (text == null || text.isBlank()) {
      throw new IllegalArgumentException(
          "the subnet pool is empty (expected such as 10.213.0.0/16)");
    }
    if (!text.contains("/")) {
      throw new IllegalArgumentException(
          text + " has no prefix length (expected a range such as 10.213.0.0/16)");
    }
    return new SubnetPool(Cidr.parse(text.strip()), DEFAULT_BLOCK_PREFIX);
  }

  /** How many blocks the range holds. */
  int blocks() {
    return 1 << (blockPrefix - range.prefixLength());
  }

  /** The range's first address as an unsigned 32-bit number. */
  long first() {
    return toLong(range.network());
  }

  /** The first address of block {@code index}. */
  long blockStart(int index) {
    return first() + ((long) index << (32 - blockPrefix));
  }

  /** Block {@code index} as {@code address/prefix}. */
  String subnet(int index) {
    return format(blockStart(index)) + "/" + blockPrefix;
  }

  /** The gateway Docker gives the bridge: the block's first host address. */
  String gateway(int index) {
    return format(blockStart(index) + 1);
  }

  /**
   * The block's address after the gateway: the first container's, given to the run's proxy on the
   * fence network so that its listen address is known before it starts.
   */
  String firstMember(int index) {
    return format(blockStart(index) + 2);
  }

  static long toLong(InetAddress address) {
    byte[] b = address.getAddress();
    return ((b[0] & 0xffL) << 24) | ((b[1] & 0xffL) << 16) | ((b[2] & 0xffL) << 8) | (b[3] & 0xffL);
  }

  static String format(long address) {
    try {
      return InetAddress.getByAddress(
              new byte[] {
                (byte) (address >>> 24),
                (byte) (address >>> 16),
                (byte) (address >>> 8),
                (byte) address
              })
          .getHostAddress();
    } catch (UnknownHostException e) {
      throw new IllegalStateException("four bytes are always an address", e);
    }
  }

  @Override
  public String toString() {
    return range + " in /" + blockPrefix + " blocks";
  }
}
