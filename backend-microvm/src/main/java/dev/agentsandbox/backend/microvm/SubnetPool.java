package dev.agentsandbox.backend.microvm;

import dev.agentsandbox.policy.net.Cidr;
import dev.agentsandbox.policy.net.IpLiteral;

/**
 * An IPv4 range cut into /30 slots, one per VM: the slot's first usable address is the tap's (the
 * host's side, where the proxy listens), the second is the guest's.
 *
 * @param base the range's first address, as an unsigned 32-bit value
 * @param slots how many /30 slots the range holds
 */
record SubnetPool(long base, int slots) {
  /** Parses {@code a.b.c.d/len} with {@code 16 <= len <= 28}, aligned to its length. */
  static SubnetPool parse(String cidr) {
    String[] parts = cidr.split("/", 2);
    byte[] address;
    int length;
    try {
      address = parts.length == 2 ? IpLiteral.parse(parts[0]) : new byte[0];
      length = Integer.parseInt(parts.length == 2 ? parts[1] : "");
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("subnet pool must be a.b.c.d/len: " + cidr, e);
    }
    if (address.length != 4) {
      throw new IllegalArgumentException("subnet pool must be a.b.c.d/len: " + cidr);
    }
    if (length < 16 || length > 28) {
      throw new IllegalArgumentException("subnet pool prefix must be /16 to /28: " + cidr);
    }
    Cidr block;
    try {
      // With an IPv4 address and a length in range, the block refuses only set host bits.
      block = new Cidr(IpLiteral.toAddress(address), length);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("subnet pool is not aligned to its prefix: " + cidr, e);
    }
    long base = 0;
    for (byte octet : block.network().getAddress()) {
      base = (base << 8) | (octet & 0xff);
    }
    return new SubnetPool(base, (int) ((1L << (32 - length)) / 4));
  }

  static String dotted(long value) {
    return ((value >> 24) & 0xff)
        + "."
        + ((value >> 16) & 0xff)
        + "."
        + ((value >> 8) & 0xff)
        + "."
        + (value & 0xff);
  }

  /** The tap's (host side) address of a slot. */
  String hostAddress(int slot) {
    return dotted(base + 4L * checked(slot) + 1);
  }

  /** The guest's address of a slot. */
  String guestAddress(int slot) {
    return dotted(base + 4L * checked(slot) + 2);
  }

  /** The tap's name of a slot: short (15 bytes at most) and matched by the fence's wildcard. */
  static String tapName(int slot) {
    return NftFence.TAP_PREFIX + slot;
  }

  private int checked(int slot) {
    if (slot < 0 || slot >= slots) {
      throw new IllegalArgumentException("slot " + slot + " is outside the pool of " + slots);
    }
    return slot;
  }
}
