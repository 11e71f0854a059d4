package dev.agentsandbox.policy.net;

/**
 * Why the proxy allowed or refused a connection attempt: a closed set whose {@link #wireName()} is
 * used verbatim in the {@code X-Agent-Sandbox-Denied} header, the decision JSON, metric labels and
 * audit rows. Keeping the set closed keeps metric cardinality bounded.
 */
public enum Reason {
  /** Every check passed. */
  ALLOWED("allowed"),
  /** No allow-list entry names the host. */
  NOT_ALLOWED("not-allowed"),
  /** An entry names the host, but not on this port. */
  PORT_NOT_ALLOWED("port-not-allowed"),
  /** The target is an IP address in some spelling; entries are host names, never addresses. */
  IP_LITERAL("ip-literal"),
  /** The target is not a well-formed host name or host:port. */
  INVALID_TARGET("invalid-target"),
  /** The sandbox allow-list allows the host, the instance egress policy does not. */
  INSTANCE_POLICY("instance-policy"),
  /** Every resolved address is loopback, private, metadata or otherwise not public. */
  NON_PUBLIC_ADDRESS("non-public-address"),
  /** The name did not resolve (no answer, an error or the resolver timed out). */
  DNS_FAILURE("dns-failure"),
  /** The TLS ClientHello names a different host than the CONNECT target (domain fronting). */
  SNI_MISMATCH("sni-mismatch"),
  /** A tunnel to port 443 did not start with a TLS ClientHello carrying a server name. */
  SNI_MISSING("sni-missing"),
  /** The request is malformed: origin-form, ambiguous framing, bad chunking, bad port. */
  BAD_REQUEST("bad-request"),
  /** A protocol upgrade (WebSocket, h2c) was requested on a plain HTTP request. */
  UPGRADE_REFUSED("upgrade-refused"),
  /** The request head is larger than the configured header limit. */
  HEADER_TOO_LARGE("header-too-large"),
  /** The proxy already holds its maximum number of client connections. */
  TOO_MANY_CONNECTIONS("too-many-connections"),
  /** The checked address did not accept the connection within the connect timeout. */
  CONNECT_TIMEOUT("connect-timeout"),
  /** The checked address refused or reset the connection. */
  CONNECT_FAILED("connect-failed"),
  /**
   * The proxy was started awaiting its policy (a pooled proxy) and no policy had arrived when the
   * connection was accepted: everything is refused, nothing resolved or dialled.
   */
  POLICY_PENDING("policy-pending"),
  /**
   * On an inspected host: no rule names the request's method (or it is not one a rule may name).
   */
  METHOD_NOT_ALLOWED("method-not-allowed"),
  /**
   * On an inspected host: rules name the method but none allows this path, or the path cannot be
   * normalised unambiguously (an encoded slash, path parameters, a broken escape, ...).
   */
  PATH_NOT_ALLOWED("path-not-allowed"),
  /**
   * On an inspected host: the request's {@code Host} header or HTTP/2 {@code :authority} names
   * another host than the one the tunnel was decided for (and the TLS server name checked).
   */
  AUTHORITY_MISMATCH("authority-mismatch"),
  /**
   * An inspected host's real certificate did not verify: expired, not yet valid, issued for another
   * name, or by no authority the proxy trusts.
   */
  UPSTREAM_CERTIFICATE("upstream-certificate"),
  /** The TLS handshake with an inspected host failed for another reason than its certificate. */
  UPSTREAM_TLS("upstream-tls");

  private final String wireName;

  Reason(String wireName) {
    this.wireName = wireName;
  }

  /** The stable lower-case name used on the wire, in JSON, metrics and audit rows. */
  public String wireName() {
    return wireName;
  }

  /** The reason whose {@link #wireName()} is {@code wireName}, if there is one. */
  public static java.util.Optional<Reason> fromWireName(String wireName) {
    for (Reason reason : values()) {
      if (reason.wireName.equals(wireName)) {
        return java.util.Optional.of(reason);
      }
    }
    return java.util.Optional.empty();
  }

  @Override
  public String toString() {
    return wireName;
  }
}
