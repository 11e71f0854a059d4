package dev.agentsandbox.cli;

import java.net.InetSocketAddress;

/** Parses {@code HOST:PORT} and {@code [IPv6]:PORT}. */
final class ListenAddress {
  private ListenAddress() {}

  static InetSocketAddress parse(String text) {
    int colon = text.lastIndexOf(':');
    if (colon <= 0 || colon == text.length() - 1) {
      throw new IllegalArgumentException(
          "listen address '" + text + "' is not HOST:PORT (such as 127.0.0.1:8080)");
    }
    String host = text.substring(0, colon);
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    } else if (host.indexOf(':') >= 0) {
      throw new IllegalArgumentException(
          "listen address '" + text + "': write an IPv6 address in brackets, such as [::1]:8080");
    }
    int port;
    try {
      port = Integer.parseInt(text.substring(colon + 1));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("listen address '" + text + "': the port is not a number");
    }
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException("listen address '" + text + "': port out of range");
    }
    return new InetSocketAddress(host, port);
  }
}
