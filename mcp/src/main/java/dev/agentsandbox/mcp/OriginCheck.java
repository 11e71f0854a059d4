package dev.agentsandbox.mcp;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Which {@code Origin} headers {@code /mcp} accepts, as the MCP streamable HTTP transport requires
 * of a server ("Servers MUST validate the Origin header on all incoming connections to prevent DNS
 * rebinding attacks"; a present and invalid one is answered 403). A web page the operator visits
 * can make its browser post to {@code 127.0.0.1}, or rebind its own name to it; the browser then
 * sends the page's origin, which is none of this server's. The request's {@code Host} header is
 * never consulted: a rebinding attacker's page sends its own name there, agreeing with its {@code
 * Origin}.
 *
 * <p>Accepted: no {@code Origin} at all (MCP hosts, SDK clients and curl send none; a browser
 * always sends one on a cross-origin or {@code POST} request) and exactly one of the server's own
 * origins, {@code http://HOST:PORT} for the address it listens on (and, when that is a loopback or
 * wildcard address, {@code 127.0.0.1}, {@code localhost} and {@code [::1]} at its port). Everything
 * else is refused: another host, another port of this machine (another local web application),
 * another scheme, {@code null} (sandboxed frames, {@code file:} pages), a list of origins, anything
 * that is not one serialized origin.
 *
 * @param own the accepted origins, each {@code http://host:port} in lower case
 */
public record OriginCheck(Set<String> own) {
  public OriginCheck {
    own = Set.copyOf(own);
    if (own.isEmpty()) {
      throw new IllegalArgumentException("an origin check needs at least one own origin");
    }
  }

  /** Why a request's {@code Origin} was accepted or refused. */
  public enum Reason {
    /** No {@code Origin} header: not a browser. */
    ABSENT,
    /** One of this server's own origins. */
    OWN_ORIGIN,
    /** A well-formed origin of another host, port or scheme. */
    FOREIGN_ORIGIN,
    /** {@code Origin: null}: an opaque origin, which names no one. */
    OPAQUE_ORIGIN,
    /** More than one {@code Origin} header, or a list of origins in one. */
    SEVERAL_ORIGINS,
    /** Not one serialized origin ({@code scheme://host[:port]}). */
    MALFORMED;

    /** Whether a request with this reason is served. */
    public boolean accepted() {
      return this == ABSENT || this == OWN_ORIGIN;
    }
  }

  /**
   * The verdict on one request's {@code Origin} headers.
   *
   * @param reason why
   * @param origin a bounded echo of what was sent (empty when absent)
   */
  public record Decision(Reason reason, String origin) {
    public Decision {
      if (reason == null || origin == null) {
        throw new IllegalArgumentException("reason and origin are required");
      }
    }
  }

  /** The own origins of a server listening on {@code bound}. */
  public static OriginCheck listeningOn(InetSocketAddress bound) {
    int port = bound.getPort();
    InetAddress address = bound.getAddress();
    if (address == null || address.isAnyLocalAddress() || address.isLoopbackAddress()) {
      String literal =
          address == null || address.isAnyLocalAddress() ? "127.0.0.1" : hostOf(address);
      // The literal bound is one of the three names, or another loopback address (127.0.0.2).
      return new OriginCheck(
          Stream.of("127.0.0.1", "localhost", "[::1]", literal)
              .map(host -> origin(host, port))
              .collect(Collectors.toSet()));
    }
    return new OriginCheck(Set.of(origin(hostOf(address), port)));
  }

  /** Decides on the values of a request's {@code Origin} headers (null or empty: none sent). */
  public Decision decide(List<String> values) {
    if (values == null || values.isEmpty()) {
      return new Decision(Reason.ABSENT, "");
    }
    String echo = Texts.bounded(String.join(", ", values));
    if (values.size() > 1) {
      return new Decision(Reason.SEVERAL_ORIGINS, echo);
    }
    String value = values.getFirst().trim();
    if (value.equals("null")) {
      return new Decision(Reason.OPAQUE_ORIGIN, echo);
    }
    if (value.indexOf(' ') >= 0 || value.indexOf(',') >= 0) {
      return new Decision(Reason.SEVERAL_ORIGINS, echo);
    }
    String normalized = normalize(value);
    if (normalized == null) {
      return new Decision(Reason.MALFORMED, echo);
    }
    return new Decision(own.contains(normalized) ? Reason.OWN_ORIGIN : Reason.FOREIGN_ORIGIN, echo);
  }

  /**
   * {@code value} as {@code scheme://host:port} in lower case with the scheme's default port made
   * explicit, or null when it is not one serialized origin (a path, a query, a fragment, user
   * information, no host, a scheme other than http or https, a port out of range).
   */
  static String normalize(String value) {
    URI uri;
    try {
      uri = new URI(value);
    } catch (URISyntaxException e) {
      return null;
    }
    String scheme = uri.getScheme() == null ? null : uri.getScheme().toLowerCase(Locale.ROOT);
    if (!"http".equals(scheme) && !"https".equals(scheme)) {
      return null;
    }
    if (uri.getHost() == null
        || uri.getRawUserInfo() != null
        || !(uri.getRawPath() == null || uri.getRawPath().isEmpty())
        || uri.getRawQuery() != null
        || uri.getRawFragment() != null) {
      return null;
    }
    int port = uri.getPort() >= 0 ? uri.getPort() : scheme.equals("http") ? 80 : 443;
    if (port == 0 || port > 65535) {
      return null;
    }
    String host = canonicalHost(uri.getHost());
    return host == null ? null : scheme + "://" + host + ":" + port;
  }

  private static String origin(String host, int port) {
    return "http://" + canonicalHost(host) + ":" + port;
  }

  private static String hostOf(InetAddress address) {
    String host = address.getHostAddress();
    return host.indexOf(':') >= 0 ? "[" + host + "]" : host;
  }

  /**
   * {@code host} in lower case, an IPv6 literal in one written form ({@code [::1]} and {@code
   * [0:0:0:0:0:0:0:1]} alike), or null when a bracketed literal is not an IPv6 address. Nothing is
   * looked up: only a literal with a colon reaches the parser, which reads it as an address.
   */
  static String canonicalHost(String host) {
    String lower = host.toLowerCase(Locale.ROOT);
    if (!lower.startsWith("[")) {
      return lower;
    }
    if (!lower.endsWith("]") || lower.indexOf(':') < 0) {
      return null;
    }
    try {
      String address =
          InetAddress.getByName(lower.substring(1, lower.length() - 1)).getHostAddress();
      int zone = address.indexOf('%');
      return "[" + (zone >= 0 ? address.substring(0, zone) : address) + "]";
    } catch (java.net.UnknownHostException e) {
      return null;
    }
  }
}
