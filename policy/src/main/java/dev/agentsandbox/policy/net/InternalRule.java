package dev.agentsandbox.policy.net;

import dev.agentsandbox.policy.HostName;
import dev.agentsandbox.policy.InvalidHostException;
import java.net.InetAddress;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * One internal destination as the proxy applies it: an address range, or the name of an in-cluster
 * service, that an allowed name may resolve to, on these ports and no others.
 *
 * <p>The rules a range must keep, each checked here so that the control plane (config time) and the
 * proxy (start-up) refuse the same things:
 *
 * <ul>
 *   <li>no wider than {@value #WIDEST_IPV4_PREFIX} (IPv4) or {@value #WIDEST_IPV6_PREFIX} (IPv6),
 *       whatever an operator configured: a declaration such as {@code 10.0.0.0/8} is a whole
 *       private network, not a destination;
 *   <li>no known metadata address inside it ({@link AddressClassifier#METADATA_ADDRESSES}) and no
 *       link-local address ({@code 169.254.0.0/16}, {@code fe80::/10}, where metadata services such
 *       as ECS's {@code 169.254.170.2} live): the proxy refuses those in any case, so a declaration
 *       covering one would be accepted and then silently never reachable;
 *   <li>not the unspecified, multicast or broadcast address;
 *   <li>IPv6 ranges do not overlap the prefixes that embed IPv4 ({@code ::/96}, {@code
 *       ::ffff:0:0/96}, {@code 64:ff9b::/96}, {@code 2002::/16}) — write the IPv4 range instead.
 * </ul>
 *
 * <p>A service rule names the host the agent uses (its cluster DNS name); any address that name
 * resolves to is permitted on the rule's ports, except loopback, link-local, unspecified, multicast
 * and broadcast ones and, before any rule, metadata addresses and the proxy's own socket. Every
 * rule has 1 to {@value #MAX_PORTS} ports, each 1 to 65535.
 *
 * <p>Immutable and thread-safe.
 *
 * @param range the address range, for a range rule
 * @param host the canonical host name, for a service rule
 * @param ports the ports the destination may be reached on
 */
public record InternalRule(Optional<Cidr> range, Optional<String> host, SortedSet<Integer> ports) {
  /** The widest IPv4 range any configuration may declare. */
  public static final int WIDEST_IPV4_PREFIX = 16;

  /** The widest IPv6 range any configuration may declare. */
  public static final int WIDEST_IPV6_PREFIX = 48;

  /** The most ports one destination may name. */
  public static final int MAX_PORTS = 16;

  private static final List<Cidr> EMBEDDING =
      List.of(
          Cidr.parse("::/96"),
          Cidr.parse("::ffff:0:0/96"),
          Cidr.parse("64:ff9b::/96"),
          Cidr.parse("2002::/16"));

  private static final List<Cidr> LINK_LOCAL =
      List.of(Cidr.parse("169.254.0.0/16"), Cidr.parse("fe80::/10"));

  private static final InetAddress BROADCAST = IpLiteral.parseAddress("255.255.255.255");

  private static final Set<AddressClass> NEVER_BY_NAME =
      Set.of(
          AddressClass.LOOPBACK,
          AddressClass.LINK_LOCAL,
          AddressClass.UNSPECIFIED,
          AddressClass.THIS_NETWORK,
          AddressClass.MULTICAST,
          AddressClass.BROADCAST,
          AddressClass.METADATA);

  public InternalRule {
    if (range.isPresent() == host.isPresent()) {
      throw new IllegalArgumentException("an internal destination is a range or a host, not both");
    }
    ports = Collections.unmodifiableSortedSet(new TreeSet<>(ports));
    String where =
        range.map(r -> "internal CIDR " + r).orElseGet(() -> "internal host " + host.get());
    checkPorts(where, ports);
    range.ifPresent(InternalRule::checkRange);
    if (host.isPresent() && !host.get().equals(canonicalHost(host.get()))) {
      throw new IllegalArgumentException(where + ": write the host name in lower case");
    }
  }

  /** A range rule. */
  public static InternalRule range(Cidr range, Collection<Integer> ports) {
    return new InternalRule(Optional.of(range), Optional.empty(), new TreeSet<>(ports));
  }

  /** A service rule for the name the agent uses. */
  public static InternalRule host(String host, Collection<Integer> ports) {
    return new InternalRule(
        Optional.empty(), Optional.of(canonicalHost(host)), new TreeSet<>(ports));
  }

  /**
   * Parses {@code CIDR:PORT[,PORT...]} as the proxy's {@code --internal-cidr} takes it, for example
   * {@code 10.20.1.0/24:4000} or {@code fd12:3456::/64:443,8443}: the ports follow the prefix
   * length.
   *
   * @throws IllegalArgumentException naming what is wrong
   */
  public static InternalRule parseRange(String text) {
    String echo = IpLiteral.echo(text == null ? "" : text);
    int slash = text == null ? -1 : text.lastIndexOf('/');
    int colon = slash < 0 ? -1 : text.indexOf(':', slash);
    if (colon < 0) {
      throw new IllegalArgumentException(
          "internal CIDR "
              + echo
              + ": needs its ports, CIDR:PORT[,PORT...] (such as 10.20.1.0/24:4000)");
    }
    Cidr range;
    try {
      range = Cidr.parse(text.substring(0, colon));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("internal CIDR " + echo + ": " + e.getMessage(), e);
    }
    return range(range, parsePorts("internal CIDR " + echo, text.substring(colon + 1)));
  }

  /** Parses a comma-separated port list, each 1 to 65535. */
  static List<Integer> parsePorts(String where, String text) {
    List<Integer> ports = new java.util.ArrayList<>();
    for (String part : text.split(",", -1)) {
      int port = EgressDecider.parsePort(part.strip());
      if (port < 0) {
        throw new IllegalArgumentException(
            where + ": " + IpLiteral.echo(part) + " is not a port (1 to 65535)");
      }
      ports.add(port);
    }
    return ports;
  }

  /** Whether this rule lets the proxy connect to {@code address} of class {@code addressClass}. */
  public boolean permits(
      String targetHost, InetAddress address, AddressClass addressClass, int port) {
    if (!ports.contains(port)) {
      return false;
    }
    if (range.isPresent()) {
      return range.get().contains(address);
    }
    return host.get().equals(targetHost) && !NEVER_BY_NAME.contains(addressClass);
  }

  /** The rule as the proxy's {@code --internal-cidr} or a person writes it. */
  @Override
  public String toString() {
    return range.map(Cidr::toString).orElseGet(host::get)
        + ":"
        + ports.stream().map(String::valueOf).collect(Collectors.joining(","));
  }

  private static String canonicalHost(String raw) {
    try {
      return HostName.canonicalTargetHost(raw);
    } catch (InvalidHostException e) {
      throw new IllegalArgumentException(
          "internal host " + IpLiteral.echo(raw == null ? "" : raw) + ": " + e.getMessage(), e);
    }
  }

  private static void checkPorts(String where, SortedSet<Integer> ports) {
    if (ports.isEmpty()) {
      throw new IllegalArgumentException(
          where + ": names no port (every internal destination lists the ports it serves)");
    }
    if (ports.size() > MAX_PORTS) {
      throw new IllegalArgumentException(where + ": more than " + MAX_PORTS + " ports");
    }
    for (int port : ports) {
      if (port < 1 || port > 65535) {
        throw new IllegalArgumentException(where + ": port " + port + " is not 1 to 65535");
      }
    }
  }

  /**
   * Checks the rules every declared range must keep; see the type's documentation.
   *
   * @throws IllegalArgumentException naming the range and the rule it breaks
   */
  public static void checkRange(Cidr range) {
    String where = "internal CIDR " + range + ": ";
    int widest = range.isIpv6() ? WIDEST_IPV6_PREFIX : WIDEST_IPV4_PREFIX;
    if (range.prefixLength() < widest) {
      throw new IllegalArgumentException(
          where + "is wider than /" + widest + " (declare the destination's own range)");
    }
    if (range.isIpv6()) {
      for (Cidr embedding : EMBEDDING) {
        if (range.overlaps(embedding)) {
          throw new IllegalArgumentException(
              where + "overlaps " + embedding + ", which embeds IPv4 (write the IPv4 range)");
        }
      }
    }
    for (InetAddress metadata : AddressClassifier.METADATA_ADDRESSES) {
      if (range.contains(metadata)) {
        throw new IllegalArgumentException(
            where
                + "covers the metadata address "
                + IpLiteral.format(metadata)
                + " (the proxy never connects to a metadata service)");
      }
    }
    for (Cidr linkLocal : LINK_LOCAL) {
      if (range.overlaps(linkLocal)) {
        throw new IllegalArgumentException(
            where
                + "overlaps the link-local range "
                + linkLocal
                + ", where metadata services live (the proxy never connects there)");
      }
    }
    AddressClass first = AddressClassifier.classify(range.network());
    if (range.contains(IpLiteral.toAddress(new byte[range.network().getAddress().length]))
        || range.contains(BROADCAST)
        || first == AddressClass.MULTICAST
        || first == AddressClass.BROADCAST) {
      throw new IllegalArgumentException(
          where + "holds the unspecified, multicast or broadcast address, never a destination");
    }
  }
}
