package dev.agentsandbox.policy;

import java.util.Optional;

/**
 * One allow-list entry: an exact host name or a {@code *.suffix} wildcard, with an optional port.
 *
 * <p>A wildcard matches any depth of subdomain on a label boundary but never the apex: {@code
 * *.vendor.com} matches {@code a.b.vendor.com}, not {@code vendor.com} and not {@code
 * evilvendor.com}. An entry without a port allows ports 80 and 443; an entry with a port allows
 * exactly that port.
 *
 * <p>Immutable and thread-safe.
 *
 * @param wildcard whether this is a {@code *.domain} entry
 * @param domain the canonical host name, or for a wildcard the suffix after {@code *.}
 * @param port the port this entry names, or {@link #DEFAULT_PORTS} for 80 and 443
 */
public record AllowEntry(boolean wildcard, String domain, int port) {
  /** The port value of an entry that names no port: it allows 80 and 443. */
  public static final int DEFAULT_PORTS = 0;

  public AllowEntry {
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException("port out of range: " + port);
    }
    // Re-canonicalizing catches a record built by hand with a non-canonical domain.
    if (!HostName.canonicalEntryHost(domain).equals(domain)) {
      throw new IllegalArgumentException("domain is not canonical: " + HostName.echo(domain));
    }
  }

  /**
   * Parses an entry as an administrator writes it: {@code host}, {@code *.suffix}, either with
   * {@code :port}.
   *
   * @throws InvalidHostException with a message fit to show after the entry's JSON path
   */
  public static AllowEntry parse(String raw) {
    if (raw == null || raw.isBlank()) {
      throw new InvalidHostException(InvalidHostException.Problem.INVALID, "the entry is empty");
    }
    if (raw.contains("://")) {
      throw new InvalidHostException(
          InvalidHostException.Problem.INVALID,
          "a scheme is refused (write the host name alone, such as api.vendor.com)");
    }
    if (raw.equals("*") || raw.startsWith("*:")) {
      throw new InvalidHostException(InvalidHostException.Problem.INVALID, "a bare * is refused");
    }
    String hostPart = raw;
    int port = DEFAULT_PORTS;
    int colon = raw.lastIndexOf(':');
    if (colon >= 0 && raw.indexOf(':') == colon && raw.indexOf(']') < 0) {
      hostPart = raw.substring(0, colon);
      port = parsePort(raw.substring(colon + 1));
    }
    boolean wildcard = hostPart.startsWith("*.");
    String domainPart = wildcard ? hostPart.substring(2) : hostPart;
    if (domainPart.indexOf('*') >= 0) {
      throw new InvalidHostException(
          InvalidHostException.Problem.INVALID,
          "* may only stand alone as the first label (*.example.com)");
    }
    String domain = HostName.canonicalEntryHost(domainPart);
    if (wildcard && domain.indexOf('.') < 0) {
      throw new InvalidHostException(
          InvalidHostException.Problem.INVALID,
          "a wildcard needs at least two labels after *. (*."
              + domain
              + " would allow a whole top-level domain)");
    }
    return new AllowEntry(wildcard, domain, port);
  }

  private static int parsePort(String text) {
    if (text.isEmpty() || text.length() > 5 || !text.chars().allMatch(c -> c >= '0' && c <= '9')) {
      throw new InvalidHostException(
          InvalidHostException.Problem.INVALID, "the port must be a number from 1 to 65535");
    }
    int port = Integer.parseInt(text);
    if (port < 1 || port > 65535) {
      throw new InvalidHostException(
          InvalidHostException.Problem.INVALID, "the port must be a number from 1 to 65535");
    }
    return port;
  }

  /** Whether this entry names its own port rather than allowing 80 and 443. */
  public boolean hasPort() {
    return port != DEFAULT_PORTS;
  }

  /** Whether the canonical host name is one this entry covers, whatever the port. */
  public boolean matchesHost(String canonicalHost) {
    if (!wildcard) {
      return domain.equals(canonicalHost);
    }
    return canonicalHost.length() > domain.length() + 1
        && canonicalHost.endsWith(domain)
        && canonicalHost.charAt(canonicalHost.length() - domain.length() - 1) == '.';
  }

  /** Whether this entry allows the port (80 and 443 when it names none). */
  public boolean allowsPort(int requested) {
    return hasPort() ? requested == port : requested == 80 || requested == 443;
  }

  /** Whether this entry allows the canonical host on the port. */
  public boolean matches(String canonicalHost, int requestedPort) {
    return matchesHost(canonicalHost) && allowsPort(requestedPort);
  }

  /** Whether every host this entry allows is allowed by {@code other} too, ports aside. */
  boolean hostsWithin(AllowEntry other) {
    if (!other.wildcard) {
      return !wildcard && domain.equals(other.domain);
    }
    return (wildcard && domain.equals(other.domain)) || other.matchesHost(domain);
  }

  /** Whether every (host, port) this entry allows is allowed by {@code other}. */
  public boolean within(AllowEntry other) {
    if (!hostsWithin(other)) {
      return false;
    }
    if (hasPort()) {
      return other.allowsPort(port);
    }
    return !other.hasPort();
  }

  /**
   * The entry allowing exactly what both entries allow, if anything. The sets an entry describes
   * (one name, or a subtree without its apex; one port, or 80 and 443) are closed under
   * intersection, so the result is always a single entry or nothing.
   */
  public Optional<AllowEntry> intersect(AllowEntry other) {
    AllowEntry hosts;
    if (hostsWithin(other)) {
      hosts = this;
    } else if (other.hostsWithin(this)) {
      hosts = other;
    } else {
      return Optional.empty();
    }
    int common;
    if (hasPort() && other.hasPort()) {
      if (port != other.port) {
        return Optional.empty();
      }
      common = port;
    } else if (hasPort() || other.hasPort()) {
      int named = hasPort() ? port : other.port;
      if (named != 80 && named != 443) {
        return Optional.empty();
      }
      common = named;
    } else {
      common = DEFAULT_PORTS;
    }
    return Optional.of(new AllowEntry(hosts.wildcard, hosts.domain, common));
  }

  /** The entry as an administrator writes it, which {@link #parse} reads back unchanged. */
  @Override
  public String toString() {
    return (wildcard ? "*." : "") + domain + (hasPort() ? ":" + port : "");
  }
}
