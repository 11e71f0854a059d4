package dev.agentsandbox.server.run;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * An upstream only this host carries: a port-less bridge holding one address from the benchmarking
 * range (198.18.0.0/15, never routed on the internet) with an HTTP server behind it. The runs'
 * proxies reach it because the tests declare that /32 internal; nothing else is sent anywhere but
 * here.
 */
final class UpstreamDrill implements AutoCloseable {
  static final String ADDRESS = "198.18.79.1";
  static final String BODY = "hello from upstream";
  private static final String LINK = "asb-runs0";

  final HttpServer server;
  private final String link;
  private final java.util.List<String> hosts = new java.util.concurrent.CopyOnWriteArrayList<>();

  private UpstreamDrill(HttpServer server, String link) {
    this.server = server;
    this.link = link;
  }

  static UpstreamDrill start() throws IOException, InterruptedException {
    return start(LINK, ADDRESS);
  }

  /**
   * The same on another link and address, for a test class that runs beside the others; every
   * request's {@code Host} header is kept ({@link #hosts()}).
   */
  static UpstreamDrill start(String link, String address) throws IOException, InterruptedException {
    run("ip", "link", "del", link);
    if (run("ip", "link", "add", link, "type", "dummy") != 0) {
      check(run("ip", "link", "add", link, "type", "bridge"), "ip link add " + link);
    }
    try {
      check(run("ip", "addr", "add", address + "/32", "dev", link), "ip addr add");
      check(run("ip", "link", "set", link, "up"), "ip link set up");
      HttpServer server =
          HttpServer.create(new InetSocketAddress(InetAddress.getByName(address), 0), 16);
      byte[] body = BODY.getBytes(StandardCharsets.UTF_8);
      UpstreamDrill drill = new UpstreamDrill(server, link);
      server.createContext(
          "/",
          exchange -> {
            String host = exchange.getRequestHeaders().getFirst("Host");
            drill.hosts.add(host == null ? "" : host);
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
          });
      server.start();
      return drill;
    } catch (IOException | RuntimeException e) {
      run("ip", "link", "del", link);
      throw e;
    }
  }

  /** The {@code Host} header of every request served, in order. */
  java.util.List<String> hosts() {
    return java.util.List.copyOf(hosts);
  }

  int port() {
    return server.getAddress().getPort();
  }

  @Override
  public void close() throws IOException, InterruptedException {
    server.stop(0);
    run("ip", "link", "del", link);
  }

  private static int run(String... command) throws IOException, InterruptedException {
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    process.getInputStream().readAllBytes();
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      return -1;
    }
    return process.exitValue();
  }

  private static void check(int status, String what) throws IOException {
    if (status != 0) {
      throw new IOException(what + " failed with status " + status + " (the ITs run as root)");
    }
  }
}
