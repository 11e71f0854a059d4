package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.net.InternalRanges;
import dev.agentsandbox.policy.net.IpLiteral;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The loopback world the integration tests run in. Test names map to 127.0.0.0/8 addresses through
 * a hosts table; only 127.0.0.2/32 is declared internal, on the two upstreams' ports, so names
 * resolving there reach the real upstreams, while names resolving to 127.0.0.3 (where a trap server
 * listens on the same port) must stay refused.
 */
final class Fixture implements AutoCloseable {
  static final String PERMITTED = "127.0.0.2";
  static final String REFUSED = "127.0.0.3";

  final TestCertificate certificate;
  final Upstream trap;
  final Upstream api;
  final Upstream tls;
  final int port;
  final Map<String, List<InetAddress>> hosts;

  Fixture() throws Exception {
    certificate = TestCertificate.forHost("tls.test");
    Upstream trapServer = null;
    Upstream apiServer = null;
    // The trap listens on 127.0.0.3 on the same port as the real upstream on 127.0.0.2, so a
    // refused address that was dialled anyway would be seen by the trap.
    for (int attempt = 0; attempt < 10 && apiServer == null; attempt++) {
      trapServer = Upstream.http(REFUSED, "trap");
      try {
        apiServer = Upstream.http(PERMITTED, "api", trapServer.port());
      } catch (IOException taken) {
        trapServer.close();
      }
    }
    if (apiServer == null) {
      throw new IllegalStateException("no port free on both 127.0.0.2 and 127.0.0.3");
    }
    trap = trapServer;
    api = apiServer;
    port = api.port();
    tls = Upstream.https(PERMITTED, "tls", certificate.serverContext());
    hosts = new LinkedHashMap<>();
    hosts.put("api.test", addresses(PERMITTED));
    hosts.put("tls.test", addresses(PERMITTED));
    hosts.put("front.test", addresses(PERMITTED));
    hosts.put("not-allowed.test", addresses(PERMITTED));
    hosts.put("a.b.wild.test", addresses(PERMITTED));
    hosts.put("evil.test", addresses(REFUSED));
    hosts.put("mixed.test", addresses(REFUSED, PERMITTED));
    hosts.put("metadata.test", addresses("169.254.169.254"));
    hosts.put("mapped.test", addresses("::ffff:" + REFUSED));
    hosts.put("private.test", addresses("10.0.0.1"));
    hosts.put("six.test", addresses("::1"));
  }

  /** The allow-list every test proxy uses unless a test narrows it. */
  List<String> allow() {
    return List.of(
        "api.test:" + port,
        "api.test",
        "tls.test:" + tls.port(),
        "front.test:" + tls.port(),
        "*.wild.test:" + port,
        "evil.test:" + port,
        "mixed.test:" + port,
        "metadata.test:" + port,
        "mapped.test:" + port,
        "private.test:" + port,
        "six.test:" + port,
        "ghost.test:" + port);
  }

  ProxyConfig config(Limits limits) {
    return config(allow(), Optional.empty(), "127.0.0.1", 0, limits);
  }

  ProxyConfig config(
      List<String> allow,
      Optional<List<String>> instanceAllow,
      String listenHost,
      int listenPort,
      Limits limits) {
    return new ProxyConfig(
        listenHost,
        listenPort,
        AllowList.parse(allow),
        instanceAllow.map(AllowList::parse),
        InternalRanges.parse(List.of(PERMITTED + "/32:" + internalPorts(allow))),
        Optional.of(hosts),
        Optional.empty(),
        Optional.empty(),
        "run-test",
        Optional.empty(),
        limits);
  }

  /**
   * The fixture's upstream ports plus every port the allow-list names: the test upstreams live on
   * {@link #PERMITTED}, declared internal on exactly the ports the tests use, as an agent declares
   * its internal destination's ports.
   */
  private String internalPorts(List<String> allow) {
    java.util.TreeSet<Integer> ports = new java.util.TreeSet<>(List.of(port, tls.port()));
    for (String entry : allow) {
      int colon = entry.lastIndexOf(':');
      if (colon > 0 && entry.substring(colon + 1).matches("[0-9]{1,5}")) {
        ports.add(Integer.parseInt(entry.substring(colon + 1)));
      }
    }
    return String.join(",", ports.stream().map(String::valueOf).toList());
  }

  static List<InetAddress> addresses(String... texts) {
    return Arrays.stream(texts).map(IpLiteral::parseAddress).toList();
  }

  /** A port that was free on the address a moment ago (for the one test that needs it up front). */
  static int freePort(String address) throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(address))) {
      return socket.getLocalPort();
    }
  }

  /** Sends raw bytes to the proxy and reads until the proxy closes (or 10 s pass). */
  static String exchange(InetSocketAddress proxy, String request) throws IOException {
    try (Socket socket = new Socket(proxy.getAddress(), proxy.getPort())) {
      socket.setSoTimeout(10_000);
      OutputStream out = socket.getOutputStream();
      out.write(request.getBytes(StandardCharsets.ISO_8859_1));
      out.flush();
      return readAll(socket.getInputStream());
    }
  }

  static String readAll(InputStream in) throws IOException {
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    byte[] chunk = new byte[8192];
    try {
      int n;
      while ((n = in.read(chunk)) >= 0) {
        buffer.write(chunk, 0, n);
      }
    } catch (SocketTimeoutException e) {
      buffer.write("\n<timed out waiting for close>".getBytes(StandardCharsets.ISO_8859_1));
    } catch (IOException reset) {
      // A reset after the answer still leaves the answer in the buffer.
    }
    return buffer.toString(StandardCharsets.ISO_8859_1);
  }

  /** Reads one HTTP response head and a Content-Length body from a kept-alive connection. */
  static String readResponse(InputStream in) throws IOException {
    StringBuilder head = new StringBuilder();
    while (!head.toString().endsWith("\r\n\r\n")) {
      int b = in.read();
      if (b < 0) {
        return head.toString();
      }
      head.append((char) b);
    }
    int length = 0;
    for (String line : head.toString().split("\r\n")) {
      if (line.toLowerCase(java.util.Locale.ROOT).startsWith("content-length:")) {
        length = Integer.parseInt(line.substring(15).strip());
      }
    }
    byte[] body = in.readNBytes(length);
    return head + new String(body, StandardCharsets.ISO_8859_1);
  }

  @Override
  public void close() {
    api.close();
    trap.close();
    tls.close();
  }
}
