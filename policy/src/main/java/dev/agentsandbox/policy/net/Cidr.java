package dev.agentsandbox.policy.net;

import java.net.InetAddress;

/**
 * A block of IP addresses written {@code address/prefix}, e.g. {@code 10.20.0.0/16} or {@code
 * fd12:3456::/48}. The address must be the block's first address (no host bits set), so what an
 * operator writes is exactly what is matched.
 *
 * <p>Immutable and thread-safe.
 *
 * @param network the block's first address (4 or 16 bytes)
 * @param prefixLength the number of leading bits that are fixed
 */
public record Cidr(InetAddress network, int prefixLength) {
  public Cidr {
    int bits = network.getAddress().length * 8;
    if (prefixLength < 0 || prefixLength > bits) {
      throw new IllegalArgumentException(
          "prefix length " + prefixLength + " is out of range 0.." + bits);
    }
    byte[] bytes = network.getAddress();
    for (int bit = prefixLength; bit < bits; bit++) {
      if ((bytes[bit / 8] & (0x80 >> (bit % 8))) != 0) {
        throw new IllegalArgumentException(
            "host bits are set in "
                + IpLiteral.format(network)
                + "/"
                + prefixLength
                + " (write the block's first address)");
      }
    }
  }

  /**
   * Parses {@code address/prefix}; a bare address means a single-address block.
   *
   * @throws IllegalArgumentException with a message naming what is wrong
   */
  public static Cidr parse(String text) {
    if (text == null || text.isBlank()) {
      throw new IllegalArgumentException("the CIDR is empty");
    }
    int slash = text.indexOf('/');
    String addressText = slash < 0 ? text : text.substring(0, slash);
    InetAddress address = IpLiteral.parseAddress(addressText);
    int bits = address.getAddress().length * 8;
    int prefix = bits;
    if (slash >= 0) {
      String prefixText = text.substring(slash + 1);
      if (prefixText.isEmpty()
          || prefixText.length() > 3
          || !prefixText.chars().allMatch(c -> c >= '0' && c <= '9')) {
        throw new IllegalArgumentException(
            "the prefix length in " + IpLiteral.echo(text) + " is not a number");
      }
      prefix = Integer.parseInt(prefixText);
    }
    return new Cidr(address, prefix);
  }

  /** Whether the address (of the same family) lies inside this block. */
  public boolean contains(InetAddress address) {
    return contains(address.getAddress());
  }

  /** Whether the 4 or 16 address bytes (of the same family) lie inside this block. */
  public boolean contains(byte[] address) {
    byte[] mine = network.getAddress();
    if (address.length != mine.length) {
      return false;
    }
    int full = prefixLength / 8;
    for (int i = 0; i < full; i++) {
      if (address[i] != mine[i]) {
        return false;
      }
    }
    int rest = prefixLength % 8;
    if (rest == 0) {
      return true;
    }
    int mask = (0xff << (8 - rest)) & 0xff;
    return (address[full] & mask) == (mine[full] & mask);
  }

  /** Whether the two blocks share at least one address. */
  public boolean overlaps(Cidr other) {
    if (network.getAddress().length != other.network.getAddress().length) {
      return false;
    }
    return prefixLength <= other.prefixLength ? contains(other.network) : other.contains(network);
  }

  /** Whether every address of {@code other} (of the same family) lies inside this block. */
  public boolean covers(Cidr other) {
    return prefixLength <= other.prefixLength && contains(other.network);
  }

  /** Whether this is an IPv6 block. */
  public boolean isIpv6() {
    return network.getAddress().length == 16;
  }

  @Override
  public String toString() {
    return IpLiteral.format(network) + "/" + prefixLength;
  }
}
