package dev.agentsandbox.policy.net;

import dev.agentsandbox.policy.text.Bounded;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.Locale;

/**
 * Strict parsing of IP address text as operators write it in configuration (CIDRs, hosts files):
 * dotted-quad IPv4 with decimal octets and no leading zeros, and RFC 4291 IPv6 text without zone.
 * The resolver-style spellings ({@code 127.1}, {@code 0x7f.1}, {@code 0177.0.0.1}) are refused so
 * that a configured address means exactly one thing. Never performs a lookup.
 *
 * <p>Stateless and thread-safe.
 */
public final class IpLiteral {
  private IpLiteral() {}

  /**
   * The 4 or 16 address bytes the text names. IPv4-mapped IPv6 text stays 16 bytes.
   *
   * @throws IllegalArgumentException when the text is not a strict IP address
   */
  public static byte[] parse(String text) {
    if (text == null || text.isEmpty() || text.length() > 45) {
      throw new IllegalArgumentException("not an IP address: " + echo(text));
    }
    byte[] bytes = text.indexOf(':') >= 0 ? parseV6(text) : parseV4(text);
    if (bytes == null) {
      throw new IllegalArgumentException("not an IP address: " + echo(text));
    }
    return bytes;
  }

  /** Parses strictly and wraps the bytes without any lookup, keeping IPv6 text IPv6. */
  public static InetAddress parseAddress(String text) {
    return toAddress(parse(text));
  }

  /**
   * Wraps 4 or 16 bytes as an address without a lookup. Unlike {@link InetAddress#getByAddress}, 16
   * bytes stay an {@link Inet6Address} even in IPv4-mapped form, so classification sees them.
   */
  public static InetAddress toAddress(byte[] bytes) {
    try {
      if (bytes.length == 4) {
        return InetAddress.getByAddress(bytes);
      }
      if (bytes.length == 16) {
        return Inet6Address.getByAddress(null, bytes, -1);
      }
    } catch (UnknownHostException e) {
      throw new IllegalArgumentException("not an IP address of 4 or 16 bytes", e);
    }
    throw new IllegalArgumentException("not an IP address of 4 or 16 bytes");
  }

  /** The address in its usual text form (IPv6 compressed, lower case). */
  public static String format(InetAddress address) {
    if (address instanceof Inet4Address) {
      return address.getHostAddress();
    }
    byte[] b = address.getAddress();
    int[] groups = new int[8];
    for (int i = 0; i < 8; i++) {
      groups[i] = ((b[2 * i] & 0xff) << 8) | (b[2 * i + 1] & 0xff);
    }
    int bestStart = -1;
    int bestLength = 1;
    for (int i = 0; i < 8; ) {
      int j = i;
      while (j < 8 && groups[j] == 0) {
        j++;
      }
      if (j - i > bestLength) {
        bestStart = i;
        bestLength = j - i;
      }
      i = j == i ? i + 1 : j;
    }
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < 8; i++) {
      if (i == bestStart) {
        out.append("::");
        i += bestLength - 1;
        continue;
      }
      if (out.length() > 0 && out.charAt(out.length() - 1) != ':') {
        out.append(':');
      }
      out.append(Integer.toHexString(groups[i]));
    }
    return out.toString().toLowerCase(Locale.ROOT);
  }

  private static byte[] parseV4(String text) {
    String[] parts = text.split("\\.", -1);
    if (parts.length != 4) {
      return null;
    }
    byte[] out = new byte[4];
    for (int i = 0; i < 4; i++) {
      String part = parts[i];
      if (part.isEmpty()
          || part.length() > 3
          || (part.length() > 1 && part.charAt(0) == '0')
          || !part.chars().allMatch(c -> c >= '0' && c <= '9')) {
        return null;
      }
      int value = Integer.parseInt(part);
      if (value > 255) {
        return null;
      }
      out[i] = (byte) value;
    }
    return out;
  }

  private static byte[] parseV6(String text) {
    String body = text;
    byte[] tail = new byte[0];
    int lastColon = text.lastIndexOf(':');
    if (text.indexOf('.', lastColon) >= 0) {
      tail = parseV4(text.substring(lastColon + 1));
      if (tail == null) {
        return null;
      }
      body = text.substring(0, lastColon + 1);
      if (!body.endsWith("::")) {
        body = body.substring(0, body.length() - 1);
      }
    }
    int groupsWanted = (16 - tail.length) / 2;
    int doubleColon = body.indexOf("::");
    if (doubleColon >= 0 && body.indexOf("::", doubleColon + 1) >= 0) {
      return null;
    }
    String[] head;
    String[] rest;
    if (doubleColon >= 0) {
      head = splitGroups(body.substring(0, doubleColon));
      rest = splitGroups(body.substring(doubleColon + 2));
      if (head == null || rest == null || head.length + rest.length >= groupsWanted) {
        return null;
      }
    } else {
      head = splitGroups(body);
      rest = new String[0];
      if (head == null || head.length != groupsWanted) {
        return null;
      }
    }
    byte[] out = new byte[16];
    int index = 0;
    for (String group : head) {
      index = putGroup(out, index, group);
      if (index < 0) {
        return null;
      }
    }
    index = groupsWanted * 2 - rest.length * 2;
    for (String group : rest) {
      index = putGroup(out, index, group);
      if (index < 0) {
        return null;
      }
    }
    System.arraycopy(tail, 0, out, 16 - tail.length, tail.length);
    return out;
  }

  private static String[] splitGroups(String text) {
    if (text.isEmpty()) {
      return new String[0];
    }
    String[] groups = text.split(":", -1);
    for (String group : groups) {
      if (group.isEmpty()
          || group.length() > 4
          || !group.chars().allMatch(c -> Character.digit(c, 16) >= 0)) {
        return null;
      }
    }
    return groups;
  }

  private static int putGroup(byte[] out, int index, String group) {
    int value = Integer.parseInt(group, 16);
    out[index] = (byte) (value >> 8);
    out[index + 1] = (byte) value;
    return index + 2;
  }

  static String echo(String text) {
    if (text == null) {
      return "null";
    }
    return "'" + Bounded.text(text, 60, Bounded.Escape.NONE) + "'";
  }

  static boolean sameBytes(InetAddress a, InetAddress b) {
    return Arrays.equals(a.getAddress(), b.getAddress());
  }
}
