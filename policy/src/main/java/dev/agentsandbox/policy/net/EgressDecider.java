package dev.agentsandbox.policy.net;

import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.HostName;
import dev.agentsandbox.policy.InvalidHostException;
import dev.agentsandbox.policy.text.Bounded;
import java.util.Optional;

/**
 * Steps 1 to 5 of the proxy's rules as a pure function: parse and canonicalize the target, refuse
 * IP literals, check the port and the allow-list, then the instance egress policy. It never
 * resolves anything, so a refused name is refused before any DNS lookup by construction.
 *
 * <p>Immutable and thread-safe.
 *
 * @param allow the sandbox allow-list
 * @param instanceAllow the instance egress policy; empty means unrestricted
 */
public record EgressDecider(AllowList allow, Optional<AllowList> instanceAllow) {
  private static final int ECHO_LIMIT = 80;

  public EgressDecider {
    if (allow == null || instanceAllow == null) {
      throw new IllegalArgumentException("allow-list and instance policy are required");
    }
  }

  /**
   * Decides an authority-form target ({@code host:port}, as in {@code CONNECT host:port}). The port
   * is required.
   */
  public Decision decideAuthority(String authority) {
    if (authority == null || authority.isEmpty()) {
      return refuse(Reason.INVALID_TARGET, "", 0, "the target is empty");
    }
    int colon = authority.lastIndexOf(':');
    if (colon < 0) {
      return refuse(
          Reason.INVALID_TARGET, echo(authority), 0, "the target needs a port (host:port)");
    }
    String hostPart = authority.substring(0, colon);
    if (hostPart.indexOf(':') >= 0 || hostPart.startsWith("[")) {
      // Only IPv6 literals carry further colons; brackets are refused as literals too.
      return refuse(Reason.IP_LITERAL, echo(hostPart), 0, ipLiteralDetail());
    }
    int port = parsePort(authority.substring(colon + 1));
    if (port < 0) {
      return refuse(Reason.INVALID_TARGET, echo(hostPart), 0, "the port is not 1 to 65535");
    }
    return decide(hostPart, port);
  }

  /** Decides a host as it was written in a request and a port already parsed (1 to 65535). */
  public Decision decide(String rawHost, int port) {
    String host;
    try {
      host = HostName.canonicalTargetHost(rawHost);
    } catch (InvalidHostException e) {
      Reason reason =
          e.problem() == InvalidHostException.Problem.IP_LITERAL
              ? Reason.IP_LITERAL
              : Reason.INVALID_TARGET;
      return refuse(reason, echo(rawHost == null ? "" : rawHost), port, e.getMessage());
    }
    if (port < 1 || port > 65535) {
      return refuse(Reason.INVALID_TARGET, host, 0, "the port is not 1 to 65535");
    }
    switch (allow.evaluate(host, port)) {
      case HOST_NOT_ALLOWED -> {
        return refuse(Reason.NOT_ALLOWED, host, port, "the host is not on the allow-list");
      }
      case PORT_NOT_ALLOWED -> {
        return refuse(
            Reason.PORT_NOT_ALLOWED,
            host,
            port,
            "port "
                + port
                + " is not allowed for this host (80 and 443 unless an entry names one)");
      }
      case ALLOWED -> {}
    }
    if (instanceAllow.isPresent()
        && instanceAllow.get().evaluate(host, port) != AllowList.Verdict.ALLOWED) {
      return refuse(
          Reason.INSTANCE_POLICY, host, port, "the instance egress policy does not allow it");
    }
    return new Decision(Reason.ALLOWED, host, port, "");
  }

  /** Parses a decimal port 1 to 65535 without sign or leading garbage; -1 when it is not one. */
  public static int parsePort(String text) {
    if (text == null
        || text.isEmpty()
        || text.length() > 5
        || !text.chars().allMatch(c -> c >= '0' && c <= '9')) {
      return -1;
    }
    int port = Integer.parseInt(text);
    return port >= 1 && port <= 65535 ? port : -1;
  }

  private static Decision refuse(Reason reason, String host, int port, String detail) {
    return new Decision(reason, host, port, detail);
  }

  private static String ipLiteralDetail() {
    return "IP addresses are refused: entries and targets are host names";
  }

  /** A bounded, printable echo of untrusted input, safe for a response body or log line. */
  static String echo(String raw) {
    return Bounded.text(raw, ECHO_LIMIT, Bounded.Escape.VISIBLE_ASCII);
  }
}
