package dev.agentsandbox.policy.net;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * Destinations an operator declared internal (an LLM gateway, a package mirror): an allowed name
 * may resolve into these ranges although they are not public. Known metadata addresses stay refused
 * inside them.
 *
 * <p>A range may not be absurdly wide, because a declaration such as {@code 0.0.0.0/0} would switch
 * the address check off: IPv4 ranges need a prefix of at least {@value #MIN_IPV4_PREFIX}, IPv6
 * ranges at least {@value #MIN_IPV6_PREFIX}, no range may contain the unspecified address, and IPv6
 * ranges may not overlap the prefixes that embed IPv4 addresses ({@code ::/96}, {@code
 * ::ffff:0:0/96}, {@code 64:ff9b::/96}, {@code 2002::/16}) — write the IPv4 range instead.
 *
 * <p>Immutable and thread-safe.
 *
 * @param ranges the declared ranges, validated
 */
public record InternalRanges(List<Cidr> ranges) {
  /** The narrowest IPv4 prefix accepted: a /8 is already a whole private network. */
  public static final int MIN_IPV4_PREFIX = 8;

  /** The narrowest IPv6 prefix accepted: a /32 is a whole provider allocation. */
  public static final int MIN_IPV6_PREFIX = 32;

  /** No internal destinations. */
  public static final InternalRanges NONE = new InternalRanges(List.of());

  private static final List<Cidr> EMBEDDING =
      List.of(
          Cidr.parse("::/96"),
          Cidr.parse("::ffff:0:0/96"),
          Cidr.parse("64:ff9b::/96"),
          Cidr.parse("2002::/16"));

  public InternalRanges {
    ranges = List.copyOf(ranges);
    for (Cidr range : ranges) {
      check(range);
    }
  }

  /**
   * Parses and validates ranges as an operator writes them.
   *
   * @throws IllegalArgumentException naming the first bad range and why
   */
  public static InternalRanges parse(List<String> texts) {
    List<Cidr> parsed = new ArrayList<>(texts.size());
    for (String text : texts) {
      try {
        parsed.add(Cidr.parse(text));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            "internal CIDR " + IpLiteral.echo(text) + ": " + e.getMessage(), e);
      }
    }
    return new InternalRanges(parsed);
  }

  private static void check(Cidr range) {
    String where = "internal CIDR " + range + ": ";
    if (range.isIpv6()) {
      if (range.prefixLength() < MIN_IPV6_PREFIX) {
        throw new IllegalArgumentException(
            where + "is wider than /" + MIN_IPV6_PREFIX + " (declare the gateway's own range)");
      }
      for (Cidr embedding : EMBEDDING) {
        if (range.overlaps(embedding)) {
          throw new IllegalArgumentException(
              where + "overlaps " + embedding + ", which embeds IPv4 (write the IPv4 range)");
        }
      }
    } else if (range.prefixLength() < MIN_IPV4_PREFIX) {
      throw new IllegalArgumentException(
          where + "is wider than /" + MIN_IPV4_PREFIX + " (declare the gateway's own range)");
    }
    AddressClass first = AddressClassifier.classify(range.network());
    if (range.contains(IpLiteral.toAddress(new byte[range.network().getAddress().length]))
        || first == AddressClass.MULTICAST
        || first == AddressClass.BROADCAST) {
      throw new IllegalArgumentException(
          where + "holds the unspecified, multicast or broadcast address, never a destination");
    }
  }

  /** Whether the address lies in a declared range (IPv4-mapped addresses as their IPv4 form). */
  public boolean contains(InetAddress address) {
    InetAddress plain = AddressClassifier.unmapped(address);
    for (Cidr range : ranges) {
      if (range.contains(plain)) {
        return true;
      }
    }
    return false;
  }

  /** The ranges as an operator writes them. */
  public List<String> asStrings() {
    return ranges.stream().map(Cidr::toString).toList();
  }
}
