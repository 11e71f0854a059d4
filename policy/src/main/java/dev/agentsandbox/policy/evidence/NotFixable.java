package dev.agentsandbox.policy.evidence;

import java.util.Objects;

/**
 * Refusals no allow-list entry would let through, and why they will stay refused.
 *
 * @param refusals the refusals, grouped by host, port and reason as recorded
 * @param why the closed reason they stay refused
 */
public record NotFixable(RefusalGroup refusals, Why why) {
  public NotFixable {
    Objects.requireNonNull(refusals, "refusals");
    Objects.requireNonNull(why, "why");
  }

  /** Why no entry fixes a refusal: a closed set, each with its wire name and its sentence. */
  public enum Why {
    IP_LITERAL(
        "ip-literal",
        "the target is an IP address: entries are host names, none allows an" + " address"),
    NOT_A_HOST_NAME("not-a-host-name", "the recorded host is not a host name an entry can name"),
    NOT_CANONICAL(
        "not-canonical",
        "the recorded host is not in the canonical form the proxy reports (lower case ASCII, no"
            + " trailing dot), so the row is not trusted to name a host"),
    NO_PORT("no-port", "the row names no port from 1 to 65535"),
    INSTANCE_POLICY(
        "instance-policy",
        "the instance egress policy of the agent's scope does not allow it, and a sandbox entry"
            + " never widens that policy (the egress policy can, with governance.weaken)"),
    NON_PUBLIC_ADDRESS(
        "non-public-address",
        "the name resolved only to non-public addresses (private, loopback, link-local,"
            + " metadata): an entry does not change that (an operator can declare an internal"
            + " destination)"),
    DNS_FAILURE("dns-failure", "the host was allowed and did not resolve"),
    SNI_MISMATCH(
        "sni-mismatch",
        "the TLS ClientHello named another host than the tunnel's (domain fronting): no entry"
            + " allows that"),
    SNI_MISSING(
        "sni-missing", "the tunnel to port 443 did not start with a TLS ClientHello naming a host"),
    MALFORMED_REQUEST(
        "malformed-request", "the request was malformed (its target, framing or head)"),
    UPGRADE_REFUSED(
        "upgrade-refused",
        "a WebSocket or h2c upgrade on plain HTTP is always refused (use CONNECT)"),
    PROXY_STATE(
        "proxy-state",
        "the proxy was at its connection limit or still awaiting its policy: not a decision about"
            + " the host"),
    UPSTREAM_FAILED(
        "upstream-failed",
        "the host was allowed and its address did not connect, or (an inspected host) its TLS"
            + " did not verify"),
    NOT_AN_ALLOW_LIST_REFUSAL(
        "not-an-allow-list-refusal",
        "the reason is not one an allow-list entry decides (an inspected host's method or path"
            + " rule, a request naming another host than its inspected tunnel, or a reason this"
            + " version does not know)"),
    READER_REFUSED("reader-refused", "the configuration reader refuses the entry it would need");

    private final String wireName;
    private final String sentence;

    Why(String wireName, String sentence) {
      this.wireName = wireName;
      this.sentence = sentence;
    }

    /** The stable name in the API's answers. */
    public String wireName() {
      return wireName;
    }

    /** Why the refusal stays, as a sentence for a person. */
    public String sentence() {
      return sentence;
    }
  }
}
