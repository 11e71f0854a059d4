package dev.agentsandbox.policy.config;

import dev.agentsandbox.policy.net.Cidr;
import dev.agentsandbox.policy.net.InternalRule;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;

/**
 * How much address space one agent's internal destinations may cover, per family, written as the
 * widest prefix allowed ({@code "internal_widest": {"ipv4": 24, "ipv6": 64}}). It bounds the union
 * of the agent's ranges, not each range alone, so a wide range split into narrow ones is refused
 * too. It can never be wider than the proxy's own floor ({@link InternalRule#WIDEST_IPV4_PREFIX},
 * {@link InternalRule#WIDEST_IPV6_PREFIX}); widening it is a loosening.
 *
 * @param ipv4Prefix the widest IPv4 prefix, {@value InternalRule#WIDEST_IPV4_PREFIX} to 32
 * @param ipv6Prefix the widest IPv6 prefix, {@value InternalRule#WIDEST_IPV6_PREFIX} to 128
 */
public record InternalWidest(int ipv4Prefix, int ipv6Prefix) {
  /** One /24 or one /64 per agent: a gateway's or a mirror's own subnet. */
  public static final InternalWidest DEFAULT = new InternalWidest(24, 64);

  public InternalWidest {
    if (ipv4Prefix < InternalRule.WIDEST_IPV4_PREFIX || ipv4Prefix > 32) {
      throw new IllegalArgumentException("ipv4 prefix out of range: " + ipv4Prefix);
    }
    if (ipv6Prefix < InternalRule.WIDEST_IPV6_PREFIX || ipv6Prefix > 128) {
      throw new IllegalArgumentException("ipv6 prefix out of range: " + ipv6Prefix);
    }
  }

  /**
   * Why these ranges together cover more than allowed, if they do: overlapping ranges count once.
   */
  public Optional<String> excess(List<Cidr> ranges) {
    for (boolean ipv6 : new boolean[] {false, true}) {
      List<Cidr> family = ranges.stream().filter(r -> r.isIpv6() == ipv6).toList();
      int bits = ipv6 ? 128 : 32;
      int prefix = ipv6 ? ipv6Prefix : ipv4Prefix;
      BigInteger covered = union(family, bits);
      BigInteger allowed = BigInteger.ONE.shiftLeft(bits - prefix);
      if (covered.compareTo(allowed) > 0) {
        return Optional.of(
            "together cover "
                + covered
                + " "
                + (ipv6 ? "IPv6" : "IPv4")
                + " addresses, more than one /"
                + prefix
                + " ("
                + allowed
                + "; internal_widest."
                + (ipv6 ? "ipv6" : "ipv4")
                + " is the limit)");
      }
    }
    return Optional.empty();
  }

  /** How many addresses the ranges cover together. */
  static BigInteger union(List<Cidr> ranges, int bits) {
    List<BigInteger[]> spans = new ArrayList<>();
    for (Cidr range : ranges) {
      BigInteger start = new BigInteger(1, range.network().getAddress());
      spans.add(
          new BigInteger[] {
            start, start.add(BigInteger.ONE.shiftLeft(bits - range.prefixLength()))
          });
    }
    spans.sort(Comparator.comparing((BigInteger[] span) -> span[0]));
    BigInteger total = BigInteger.ZERO;
    BigInteger reached = BigInteger.ZERO;
    for (BigInteger[] span : spans) {
      BigInteger from = span[0].max(reached);
      if (span[1].compareTo(from) > 0) {
        total = total.add(span[1].subtract(from));
        reached = span[1];
      }
    }
    return total;
  }
}
