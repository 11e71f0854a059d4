package dev.agentsandbox.policy.net;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

/**
 * Classifies an IP address by the IANA IPv4 and IPv6 special-purpose address registries, so the
 * proxy can refuse every destination that is not plainly public.
 *
 * <p>IPv6 is default-deny: only global unicast {@code 2000::/3} can be {@link AddressClass#PUBLIC};
 * inside it the special-purpose blocks are carved out. IPv6 forms that embed an IPv4 address are
 * classified by the IPv4 address the packet would end up at (IPv4-mapped {@code ::ffff:0:0/96}, the
 * NAT64 well-known prefix {@code 64:ff9b::/96}, 6to4 {@code 2002::/16}); where the embedding cannot
 * be checked (local-use NAT64 {@code 64:ff9b:1::/48}, Teredo inside {@code 2001::/23}, deprecated
 * IPv4-compatible {@code ::/96}) the address is refused outright.
 *
 * <p>Pure (no lookups), stateless and thread-safe.
 */
public final class AddressClassifier {
  private record Block(Cidr cidr, AddressClass addressClass) {}

  /**
   * Known cloud metadata and host-agent addresses: AWS/GCP/Azure/OpenStack IMDS, AWS IMDS over
   * IPv6, Alibaba Cloud, Oracle Cloud (192.0.0.192) and Azure's WireServer (168.63.129.16).
   */
  public static final List<InetAddress> METADATA_ADDRESSES =
      List.of(
          IpLiteral.parseAddress("169.254.169.254"),
          IpLiteral.parseAddress("fd00:ec2::254"),
          IpLiteral.parseAddress("100.100.100.200"),
          IpLiteral.parseAddress("192.0.0.192"),
          IpLiteral.parseAddress("168.63.129.16"));

  // Order matters: the first block that contains the address wins, most specific first.
  private static final List<Block> V4 =
      List.of(
          block("0.0.0.0/32", AddressClass.UNSPECIFIED),
          block("0.0.0.0/8", AddressClass.THIS_NETWORK),
          block("10.0.0.0/8", AddressClass.PRIVATE),
          block("100.64.0.0/10", AddressClass.SHARED),
          block("127.0.0.0/8", AddressClass.LOOPBACK),
          block("169.254.0.0/16", AddressClass.LINK_LOCAL),
          block("172.16.0.0/12", AddressClass.PRIVATE),
          block("192.0.0.0/24", AddressClass.IETF_PROTOCOL),
          block("192.0.2.0/24", AddressClass.DOCUMENTATION),
          block("192.88.99.0/24", AddressClass.RESERVED),
          block("192.168.0.0/16", AddressClass.PRIVATE),
          block("198.18.0.0/15", AddressClass.BENCHMARKING),
          block("198.51.100.0/24", AddressClass.DOCUMENTATION),
          block("203.0.113.0/24", AddressClass.DOCUMENTATION),
          block("224.0.0.0/4", AddressClass.MULTICAST),
          block("255.255.255.255/32", AddressClass.BROADCAST),
          block("240.0.0.0/4", AddressClass.RESERVED));

  private static final Cidr V6_MAPPED = Cidr.parse("::ffff:0:0/96");
  private static final Cidr V6_COMPATIBLE = Cidr.parse("::/96");
  private static final Cidr V6_NAT64 = Cidr.parse("64:ff9b::/96");
  private static final Cidr V6_6TO4 = Cidr.parse("2002::/16");
  private static final Cidr V6_GLOBAL_UNICAST = Cidr.parse("2000::/3");

  private static final List<Block> V6 =
      List.of(
          block("::/128", AddressClass.UNSPECIFIED),
          block("::1/128", AddressClass.LOOPBACK),
          block("64:ff9b:1::/48", AddressClass.IETF_PROTOCOL),
          block("100::/64", AddressClass.RESERVED),
          block("2001:2::/48", AddressClass.BENCHMARKING),
          block("2001:db8::/32", AddressClass.DOCUMENTATION),
          block("2001::/23", AddressClass.IETF_PROTOCOL),
          block("3fff::/20", AddressClass.DOCUMENTATION),
          block("5f00::/16", AddressClass.RESERVED),
          block("fc00::/7", AddressClass.UNIQUE_LOCAL),
          block("fe80::/10", AddressClass.LINK_LOCAL),
          block("fec0::/10", AddressClass.UNIQUE_LOCAL),
          block("ff00::/8", AddressClass.MULTICAST));

  /**
   * What a network-layer fence (a Kubernetes NetworkPolicy's except list, an nftables set) refuses
   * in IPv4: every block of the table above and every metadata address, exactly the addresses
   * {@link #classify} does not call public. No range lies inside another; in address order.
   */
  public static final List<Cidr> FENCE_V4 =
      fence(
          Stream.concat(
                  V4.stream().map(Block::cidr),
                  METADATA_ADDRESSES.stream()
                      .filter(a -> a.getAddress().length == 4)
                      .map(a -> new Cidr(a, 32)))
              .toList());

  /**
   * What a network-layer fence refuses in IPv6: every block of the table above, every metadata
   * address, everything outside global unicast {@code 2000::/3} ({@code ::/3}, {@code 4000::/2},
   * {@code 8000::/1}, which hold unique-local, link-local and multicast), and the whole of each
   * prefix that embeds an IPv4 address ({@code ::/96}, {@code ::ffff:0:0/96}, {@code 64:ff9b::/96},
   * {@code 2002::/16}). A fence cannot look inside an embedded address, so it refuses these
   * outright where the proxy would let a public IPv4 address through them: the fence is never less
   * strict than {@link #classify}. No range lies inside another; in address order.
   */
  public static final List<Cidr> FENCE_V6 =
      fence(
          Stream.of(
                  V6.stream().map(Block::cidr),
                  METADATA_ADDRESSES.stream()
                      .filter(a -> a.getAddress().length == 16)
                      .map(a -> new Cidr(a, 128)),
                  Stream.of(Cidr.parse("::/3"), Cidr.parse("4000::/2"), Cidr.parse("8000::/1")),
                  Stream.of(V6_COMPATIBLE, V6_MAPPED, V6_NAT64, V6_6TO4))
              .flatMap(s -> s)
              .toList());

  private AddressClassifier() {}

  /** The ranges without those another range covers, in address order. */
  private static List<Cidr> fence(List<Cidr> ranges) {
    List<Cidr> kept = new ArrayList<>();
    for (Cidr range : ranges) {
      boolean covered = ranges.stream().anyMatch(o -> !o.equals(range) && o.covers(range));
      if (!covered && !kept.contains(range)) {
        kept.add(range);
      }
    }
    kept.sort((a, b) -> Arrays.compareUnsigned(a.network().getAddress(), b.network().getAddress()));
    return List.copyOf(kept);
  }

  /** The class of the address; {@link AddressClass#PUBLIC} only when no special range holds it. */
  public static AddressClass classify(InetAddress address) {
    return classify(address.getAddress());
  }

  /** The class of 4 or 16 address bytes. */
  public static AddressClass classify(byte[] bytes) {
    if (isMetadata(bytes)) {
      return AddressClass.METADATA;
    }
    if (bytes.length == 4) {
      return lookup(V4, bytes);
    }
    if (bytes.length != 16) {
      throw new IllegalArgumentException("an IP address has 4 or 16 bytes, not " + bytes.length);
    }
    if (V6_MAPPED.contains(bytes) || V6_NAT64.contains(bytes)) {
      return classify(slice(bytes, 12));
    }
    if (V6_COMPATIBLE.contains(bytes)) {
      // ::/128 and ::1/128 sit inside ::/96 and keep their own classes.
      AddressClass own = lookup(V6, bytes);
      return own == AddressClass.PUBLIC ? AddressClass.RESERVED : own;
    }
    if (V6_6TO4.contains(bytes)) {
      return classify(slice(bytes, 2));
    }
    AddressClass special = lookup(V6, bytes);
    if (special != AddressClass.PUBLIC) {
      return special;
    }
    return V6_GLOBAL_UNICAST.contains(bytes) ? AddressClass.PUBLIC : AddressClass.RESERVED;
  }

  /**
   * Whether the address is a known metadata address, also when embedded in IPv6 (mapped, NAT64,
   * 6to4).
   */
  public static boolean isMetadata(InetAddress address) {
    return isMetadata(address.getAddress());
  }

  private static boolean isMetadata(byte[] bytes) {
    for (InetAddress metadata : METADATA_ADDRESSES) {
      if (Arrays.equals(metadata.getAddress(), bytes)) {
        return true;
      }
    }
    if (bytes.length == 16) {
      if (V6_MAPPED.contains(bytes) || V6_NAT64.contains(bytes)) {
        return isMetadata(slice(bytes, 12));
      }
      if (V6_6TO4.contains(bytes)) {
        return isMetadata(slice(bytes, 2));
      }
    }
    return false;
  }

  /**
   * The IPv4 address an IPv4-mapped IPv6 address stands for, else the address itself: a socket
   * connect to {@code ::ffff:a.b.c.d} reaches {@code a.b.c.d}, so both must be checked alike.
   */
  public static InetAddress unmapped(InetAddress address) {
    byte[] bytes = address.getAddress();
    if (bytes.length == 16 && V6_MAPPED.contains(bytes)) {
      return IpLiteral.toAddress(slice(bytes, 12));
    }
    return address;
  }

  private static AddressClass lookup(List<Block> blocks, byte[] bytes) {
    for (Block block : blocks) {
      if (block.cidr().contains(bytes)) {
        return block.addressClass();
      }
    }
    return AddressClass.PUBLIC;
  }

  private static byte[] slice(byte[] bytes, int from) {
    byte[] v4 = new byte[4];
    System.arraycopy(bytes, from, v4, 0, 4);
    return v4;
  }

  private static Block block(String cidr, AddressClass addressClass) {
    return new Block(Cidr.parse(cidr), addressClass);
  }
}
