package dev.agentsandbox.backend.microvm;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.UnknownHostException;

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
    if (parts.length != 2) {
      throw new IllegalArgumentException("subnet pool must be a.b.c.d/len: " + cidr);
    }
    int length;
    try {
      length = Integer.parseInt(parts[1]);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("subnet pool must be a.b.c.d/len: " + cidr, e);
    }
    if (length < 16 || length > 28) {
      throw new IllegalArgumentException("subnet pool prefix must be /16 to /28: " + cidr);
    }
    long base = toLong(parts[0], cidr);
    long size = 1L << (32 - length);
    if (base % size != 0) {
      throw new IllegalArgumentException("subnet pool is not aligned to its prefix: " + cidr);
    }
    return new SubnetPool(base, (int) (size / 4));
  }

  private static long toLong(String dotted, String cidr) {
    if (!dotted.matches("[0-9]{1,3}(\\.[0-9]{1,3}){3}")) {
      throw new IllegalArgumentException("subnet pool must be a.b.c.d/len: " + cidr);
    }
    try {
      byte[] bytes = ((Inet4Address) InetAddress.getByName(dotted)).getAddress();
      long value = 0;
      for (byte b : bytes) {
        value = (value << 8) | (b & 0xff);
      }
      return value;
    } catch (UnknownHostException | ClassCastException e) {
      throw new IllegalArgumentException("subnet pool must be a.b.c.d/len: " + cidr, e);
    }
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
