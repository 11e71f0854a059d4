package dev.agentsandbox.cli;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;
import java.util.Optional;

/**
 * A control plane's base URL as the CLI compares and trusts it: {@code http(s)://HOST[:PORT]}, the
 * same server whatever the case of its scheme and host, an explicit default port or a trailing
 * slash. A token saved for one URL is sent to no other, and never in clear text over a network
 * unless the operator said {@code --insecure}.
 */
record ServerUrl(String scheme, String host, int port, String path) {
  ServerUrl {
    if (!scheme.equals("http") && !scheme.equals("https")) {
      throw new IllegalArgumentException("not http(s): " + scheme);
    }
  }

  /** Parses {@code text}, or says why it is not a server's URL. */
  static ServerUrl parse(String text) {
    URI uri;
    try {
      uri = new URI(text.strip());
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException(problem(text));
    }
    String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
    if (!(scheme.equals("http") || scheme.equals("https"))
        || uri.getHost() == null
        || uri.getUserInfo() != null
        || uri.getQuery() != null
        || uri.getFragment() != null) {
      throw new IllegalArgumentException(problem(text));
    }
    int port = uri.getPort() >= 0 ? uri.getPort() : scheme.equals("https") ? 443 : 80;
    String path = uri.getRawPath() == null ? "" : uri.getRawPath().replaceAll("/+$", "");
    return new ServerUrl(scheme, uri.getHost().toLowerCase(Locale.ROOT), port, path);
  }

  /** The same URL, or empty when {@code text} is not one (a context file edited by hand). */
  static Optional<ServerUrl> tryParse(String text) {
    try {
      return Optional.of(parse(text));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  private static String problem(String text) {
    return "--url "
        + TerminalText.line(text)
        + ": not a server's URL (expected http(s)://HOST[:PORT], no user, query or fragment)";
  }

  /**
   * Whether the host is this machine by its very name — {@code localhost}, {@code 127.0.0.0/8},
   * {@code ::1} — without asking DNS, which a name that merely resolves there would need.
   */
  boolean loopback() {
    String bare = host.startsWith("[") ? host.substring(1, host.length() - 1) : host;
    return bare.equals("localhost")
        || bare.endsWith(".localhost")
        || bare.matches("127(\\.(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])){3}")
        || bare.equals("::1")
        || bare.equals("0:0:0:0:0:0:0:1");
  }

  /** Plain HTTP to a host that is not this machine: a token would cross a network in clear. */
  boolean cleartextOverNetwork() {
    return scheme.equals("http") && !loopback();
  }

  @Override
  public String toString() {
    boolean defaultPort = port == (scheme.equals("https") ? 443 : 80);
    return scheme + "://" + host + (defaultPort ? "" : ":" + port) + path;
  }
}
