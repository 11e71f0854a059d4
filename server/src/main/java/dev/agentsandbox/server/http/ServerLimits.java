package dev.agentsandbox.server.http;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Bounds on what one client can hold of the JDK HTTP server. The JDK server reads them from system
 * properties once, when the first server of the JVM is made, and applies them to every server in
 * it; {@link #apply()} sets each one the operator has not set ({@code java -Dname=value} wins).
 *
 * <ul>
 *   <li>{@code sun.net.httpserver.maxReqTime} (s): from a request's first byte to the end of its
 *       body, and how long a new connection may stay silent. A client that trickles its request is
 *       cut off; the JDK's default is never.
 *   <li>{@code jdk.httpserver.maxConnections}: open connections; past it the server stops accepting
 *       until some close (the JDK's default is no cap).
 *   <li>{@code sun.net.httpserver.maxReqHeaderSize} (bytes): the request head (names, values and 32
 *       bytes per line); past it the request is refused.
 *   <li>{@code sun.net.httpserver.idleInterval} (s): how long an idle kept-alive connection stays.
 * </ul>
 */
public final class ServerLimits {
  /** The values {@link #apply()} sets when the operator set none. */
  public static final Map<String, String> DEFAULTS = defaults();

  private ServerLimits() {}

  private static Map<String, String> defaults() {
    Map<String, String> limits = new LinkedHashMap<>();
    limits.put("sun.net.httpserver.maxReqTime", "20");
    limits.put("jdk.httpserver.maxConnections", "1000");
    limits.put("sun.net.httpserver.maxReqHeaderSize", String.valueOf(64 * 1024));
    limits.put("sun.net.httpserver.idleInterval", "30");
    return Map.copyOf(limits);
  }

  /** Sets each limit the operator has not set; call before the first server is created. */
  public static void apply() {
    DEFAULTS.forEach(
        (name, value) -> {
          if (System.getProperty(name) == null) {
            System.setProperty(name, value);
          }
        });
  }
}
