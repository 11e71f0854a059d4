package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.net.EgressDecider;

/**
 * A {@code HOST:PORT} pair from configuration ({@code --listen}, {@code --metrics}, {@code
 * --dns-server}); IPv6 hosts are written in brackets, {@code [::1]:3128}.
 *
 * @param host the host without brackets
 * @param port 0 to 65535
 */
record HostPort(String host, int port) {
  static HostPort parse(String text, String option) {
    if (text == null || text.isBlank()) {
      throw new InvalidProxyConfigException(option + ": expected HOST:PORT, got nothing");
    }
    int colon = text.lastIndexOf(':');
    if (colon <= 0 || colon == text.length() - 1) {
      throw new InvalidProxyConfigException(
          option + ": expected HOST:PORT, got '" + Echo.of(text) + "' (e.g. 127.0.0.1:3128)");
    }
    String host = text.substring(0, colon);
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    } else if (host.indexOf(':') >= 0) {
      throw new InvalidProxyConfigException(
          option + ": write an IPv6 host in brackets, e.g. [::1]:3128");
    }
    String portText = text.substring(colon + 1);
    int port = portText.equals("0") ? 0 : EgressDecider.parsePort(portText);
    if (port < 0) {
      throw new InvalidProxyConfigException(
          option + ": the port in '" + Echo.of(text) + "' must be a number from 0 to 65535");
    }
    return new HostPort(host, port);
  }
}
