package dev.agentsandbox.bench;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.Optional;

/**
 * How the harness reaches the upstream: straight to it (the baseline), or through a forward proxy
 * with CONNECT or absolute-form requests.
 *
 * @param label name in the report
 * @param proxy the proxy's listening address, empty for the direct baseline
 * @param upstream where the upstream listens (what the bench names resolve to)
 * @param allowedHost a name on every proxy's allow-list
 * @param refusedHost a name that resolves like the allowed one but is not on the list
 */
record Route(
    String label,
    Optional<InetSocketAddress> proxy,
    InetSocketAddress upstream,
    String allowedHost,
    String refusedHost) {

  static final int CONNECT_TIMEOUT_MILLIS = 5_000;
  static final int READ_TIMEOUT_MILLIS = 10_000;

  Route {
    Objects.requireNonNull(label);
    Objects.requireNonNull(proxy);
    Objects.requireNonNull(upstream);
    Objects.requireNonNull(allowedHost);
    Objects.requireNonNull(refusedHost);
  }

  boolean direct() {
    return proxy.isEmpty();
  }

  /** Result of one CONNECT attempt: the status and, when it was 200, the open tunnel. */
  record Attempt(int status, Socket socket, HeadReader reader) {}

  /**
   * Opens a TCP connection to the proxy and asks for a tunnel to {@code host} at the upstream's
   * port; for the direct route, just connects. The caller closes the socket.
   */
  Attempt connect(String host) throws IOException {
    Socket socket = new Socket();
    try {
      socket.setTcpNoDelay(true);
      socket.setSoTimeout(READ_TIMEOUT_MILLIS);
      socket.connect(proxy.orElse(upstream), CONNECT_TIMEOUT_MILLIS);
      HeadReader reader = new HeadReader(socket.getInputStream());
      if (proxy.isEmpty()) {
        return new Attempt(200, socket, reader);
      }
      String authority = host + ":" + upstream.getPort();
      OutputStream out = socket.getOutputStream();
      out.write(
          ("CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n")
              .getBytes(StandardCharsets.US_ASCII));
      out.flush();
      String head = reader.readHead();
      if (head == null) {
        throw new IOException(
            "CONNECT " + authority + " via " + label + ": connection closed without an answer");
      }
      int status = statusOf(head);
      if (status == 200 && reader.buffered() != 0) {
        throw new IOException(
            "CONNECT " + authority + " via " + label + ": bytes arrived after the 200 head");
      }
      return new Attempt(status, socket, reader);
    } catch (IOException | RuntimeException e) {
      socket.close();
      throw e;
    }
  }

  /** Opens a tunnel to the allowed host and sends the upstream {@code command}. */
  Socket tunnel(byte[] command) throws IOException {
    Attempt attempt = connect(allowedHost);
    if (attempt.status() != 200) {
      attempt.socket().close();
      throw new IOException(
          "CONNECT "
              + allowedHost
              + " via "
              + label
              + ": status "
              + attempt.status()
              + " (expected 200; is the name on the allow-list?)");
    }
    attempt.socket().getOutputStream().write(command);
    attempt.socket().getOutputStream().flush();
    return attempt.socket();
  }

  /** The request line and headers of one keep-alive GET, absolute-form through a proxy. */
  byte[] httpRequest() {
    String authority = allowedHost + ":" + upstream.getPort();
    String target = proxy.isPresent() ? "http://" + authority + "/bench" : "/bench";
    return ("GET "
            + target
            + " HTTP/1.1\r\nHost: "
            + authority
            + "\r\nUser-Agent: agent-sandbox-bench\r\nAccept: */*\r\n\r\n")
        .getBytes(StandardCharsets.US_ASCII);
  }

  /** Opens a plain TCP connection to where HTTP requests go (proxy or upstream). */
  Socket httpConnection() throws IOException {
    Socket socket = new Socket();
    try {
      socket.setTcpNoDelay(true);
      socket.setSoTimeout(READ_TIMEOUT_MILLIS);
      socket.connect(proxy.orElse(upstream), CONNECT_TIMEOUT_MILLIS);
      return socket;
    } catch (IOException e) {
      socket.close();
      throw e;
    }
  }

  static int statusOf(String head) throws IOException {
    // "HTTP/1.1 200 Connection established"
    int space = head.indexOf(' ');
    if (!head.startsWith("HTTP/") || space < 0 || head.length() < space + 4) {
      throw new IOException("not an HTTP status line: " + firstLine(head));
    }
    try {
      return Integer.parseInt(head.substring(space + 1, space + 4));
    } catch (NumberFormatException e) {
      throw new IOException("not an HTTP status line: " + firstLine(head), e);
    }
  }

  private static String firstLine(String head) {
    int eol = head.indexOf('\r');
    String line = eol < 0 ? head : head.substring(0, eol);
    return line.length() > 80 ? line.substring(0, 80) + "..." : line;
  }
}
