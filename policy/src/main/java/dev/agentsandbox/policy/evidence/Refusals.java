package dev.agentsandbox.policy.evidence;

import dev.agentsandbox.policy.HostName;
import dev.agentsandbox.policy.InvalidHostException;
import dev.agentsandbox.policy.net.Decision;
import dev.agentsandbox.policy.net.EgressDecider;
import dev.agentsandbox.policy.net.Reason;
import java.util.Optional;

/**
 * Which recorded refusals an allow-list entry could fix. Only {@code not-allowed} and {@code
 * port-not-allowed} are the allow-list's own refusals; every other reason is decided after the list
 * (addresses, TLS, the upstream), by the instance policy, or by no rule about the host at all. A
 * fixable refusal must also name a canonical host and a port, and still be refused by the list as
 * it is now. Stateless.
 */
final class Refusals {
  private Refusals() {}

  /** How a group of refusals stands against the current configuration. */
  sealed interface Standing {
    /** An entry for this host and port would let it through. */
    record Fixable() implements Standing {}

    /** The current configuration already allows it. */
    record NowAllowed() implements Standing {}

    /** No entry would let it through. */
    record Stays(NotFixable.Why why) implements Standing {}
  }

  /** Where a recorded refusal stands, given the agent's current lists. */
  static Standing standing(String host, int port, String reasonName, EgressDecider now) {
    Optional<Reason> known = Reason.fromWireName(reasonName);
    if (known.isEmpty()) {
      return new Standing.Stays(NotFixable.Why.NOT_AN_ALLOW_LIST_REFUSAL);
    }
    NotFixable.Why why =
        switch (known.get()) {
          case NOT_ALLOWED, PORT_NOT_ALLOWED -> null;
          case ALLOWED -> NotFixable.Why.NOT_AN_ALLOW_LIST_REFUSAL;
          case IP_LITERAL -> NotFixable.Why.IP_LITERAL;
          case INVALID_TARGET, BAD_REQUEST, HEADER_TOO_LARGE -> NotFixable.Why.MALFORMED_REQUEST;
          case INSTANCE_POLICY -> NotFixable.Why.INSTANCE_POLICY;
          case NON_PUBLIC_ADDRESS -> NotFixable.Why.NON_PUBLIC_ADDRESS;
          case DNS_FAILURE -> NotFixable.Why.DNS_FAILURE;
          case SNI_MISMATCH -> NotFixable.Why.SNI_MISMATCH;
          case SNI_MISSING -> NotFixable.Why.SNI_MISSING;
          case UPGRADE_REFUSED -> NotFixable.Why.UPGRADE_REFUSED;
          case TOO_MANY_CONNECTIONS, POLICY_PENDING -> NotFixable.Why.PROXY_STATE;
          case CONNECT_TIMEOUT, CONNECT_FAILED, UPSTREAM_CERTIFICATE, UPSTREAM_TLS ->
              NotFixable.Why.UPSTREAM_FAILED;
          // An inspected host's own rules: the host is listed already, and an entry for another
          // host does not make a request naming it inside this host's tunnel pass.
          case METHOD_NOT_ALLOWED, PATH_NOT_ALLOWED, AUTHORITY_MISMATCH ->
              NotFixable.Why.NOT_AN_ALLOW_LIST_REFUSAL;
        };
    if (why != null) {
      return new Standing.Stays(why);
    }
    String canonical;
    try {
      canonical = HostName.canonicalEntryHost(host);
    } catch (InvalidHostException e) {
      return new Standing.Stays(
          e.problem() == InvalidHostException.Problem.IP_LITERAL
              ? NotFixable.Why.IP_LITERAL
              : NotFixable.Why.NOT_A_HOST_NAME);
    }
    if (!canonical.equals(host)) {
      return new Standing.Stays(NotFixable.Why.NOT_CANONICAL);
    }
    if (port < 1 || port > 65535) {
      return new Standing.Stays(NotFixable.Why.NO_PORT);
    }
    Decision decision = now.decide(host, port);
    return switch (decision.reason()) {
      case ALLOWED -> new Standing.NowAllowed();
      case NOT_ALLOWED, PORT_NOT_ALLOWED -> new Standing.Fixable();
      case INSTANCE_POLICY -> new Standing.Stays(NotFixable.Why.INSTANCE_POLICY);
      default -> new Standing.Stays(NotFixable.Why.NOT_A_HOST_NAME);
    };
  }
}
