package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.net.Reason;

/**
 * The target of a plain HTTP proxy request, which must be in absolute form ({@code
 * http://host[:port]/path}). Origin-form ({@code /path}) is refused: it would leave only the Host
 * header to decide on, and a proxy never decides on a Host header.
 *
 * @param host the host as written (checked later by the policy)
 * @param port the port as written, or {@link #NO_PORT}
 * @param authority the authority as written, without user information
 * @param originForm the path and query to send upstream
 * @param problem why the target is refused, or null
 * @param problemReason the reason for {@code problem}
 */
record AbsoluteTarget(
    String host,
    int port,
    String authority,
    String originForm,
    String problem,
    Reason problemReason) {
  static final int NO_PORT = -1;
  private static final String SCHEME = "http://";

  static AbsoluteTarget parse(String uri) {
    if (uri.regionMatches(true, 0, "https://", 0, 8)) {
      return refused(
          Reason.BAD_REQUEST, "https:// targets go through CONNECT, not plain HTTP proxying");
    }
    if (!uri.regionMatches(true, 0, SCHEME, 0, SCHEME.length())) {
      return refused(
          Reason.BAD_REQUEST,
          "a proxy request needs an absolute-form target such as http://host/path");
    }
    int start = SCHEME.length();
    int end = start;
    while (end < uri.length() && "/?#".indexOf(uri.charAt(end)) < 0) {
      end++;
    }
    String authority = uri.substring(start, end);
    String rest = uri.substring(end);
    int fragment = rest.indexOf('#');
    if (fragment >= 0) {
      rest = rest.substring(0, fragment);
    }
    if (rest.isEmpty()) {
      rest = "/";
    } else if (rest.charAt(0) == '?') {
      rest = "/" + rest;
    }
    if (authority.indexOf('@') >= 0) {
      return refused(Reason.INVALID_TARGET, "user information (user@host) is refused");
    }
    if (authority.startsWith("[") || authority.indexOf(':') != authority.lastIndexOf(':')) {
      return new AbsoluteTarget(authority, 0, authority, rest, null, null);
    }
    int colon = authority.indexOf(':');
    if (colon < 0) {
      return new AbsoluteTarget(authority, NO_PORT, authority, rest, null, null);
    }
    return new AbsoluteTarget(authority.substring(0, colon), 0, authority, rest, null, null);
  }

  private static AbsoluteTarget refused(Reason reason, String problem) {
    return new AbsoluteTarget("", NO_PORT, "", "/", problem, reason);
  }
}
