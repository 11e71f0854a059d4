package dev.agentsandbox.policy.net;

/**
 * What kind of destination an IP address is. Only {@link #PUBLIC} is dialled without an operator's
 * declaration; every other class comes from the IANA IPv4 and IPv6 special-purpose address
 * registries, or from where the proxy itself runs.
 */
public enum AddressClass {
  /** Globally routable unicast, in no special-purpose range. */
  PUBLIC("public"),
  /** {@code 0.0.0.0}, {@code ::}: on many stacks a connect to it reaches the local host. */
  UNSPECIFIED("unspecified"),
  /** {@code 0.0.0.0/8} "this network" (RFC 791). */
  THIS_NETWORK("this-network"),
  /** {@code 127.0.0.0/8}, {@code ::1}. */
  LOOPBACK("loopback"),
  /** RFC 1918 ({@code 10/8}, {@code 172.16/12}, {@code 192.168/16}). */
  PRIVATE("private"),
  /** {@code fc00::/7} unique local and deprecated site-local {@code fec0::/10}. */
  UNIQUE_LOCAL("unique-local"),
  /** {@code 169.254.0.0/16}, {@code fe80::/10}. */
  LINK_LOCAL("link-local"),
  /** A cloud metadata or host-agent service address; refused even inside an internal range. */
  METADATA("metadata"),
  /** {@code 100.64.0.0/10} shared address space (carrier-grade NAT, RFC 6598). */
  SHARED("shared-cgnat"),
  /** {@code 192.0.0.0/24} IETF protocol assignments, {@code 2001::/23}, {@code 64:ff9b:1::/48}. */
  IETF_PROTOCOL("ietf-protocol"),
  /** {@code 198.18.0.0/15}, {@code 2001:2::/48} benchmarking. */
  BENCHMARKING("benchmarking"),
  /** TEST-NETs, {@code 2001:db8::/32}, {@code 3fff::/20}. */
  DOCUMENTATION("documentation"),
  /** {@code 240.0.0.0/4}, IPv4-compatible IPv6, discard-only, and IPv6 outside 2000::/3. */
  RESERVED("reserved"),
  /** {@code 224.0.0.0/4}, {@code ff00::/8}. */
  MULTICAST("multicast"),
  /** {@code 255.255.255.255}. */
  BROADCAST("broadcast"),
  /** An address of one of the proxy host's own network interfaces. */
  PROXY_HOST("proxy-host"),
  /** The proxy's own listening address and port: dialling it would loop. */
  PROXY_LISTENER("proxy-listener");

  private final String wireName;

  AddressClass(String wireName) {
    this.wireName = wireName;
  }

  /** The stable lower-case name used in refusal bodies and documentation. */
  public String wireName() {
    return wireName;
  }

  @Override
  public String toString() {
    return wireName;
  }
}
