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

  private UpstreamDrill(HttpServer server) {
    this.server = server;
  }

  static UpstreamDrill start() throws IOException, InterruptedException {
    run("ip", "link", "del", LINK);
    if (run("ip", "link", "add", LINK, "type", "dummy") != 0) {
      check(run("ip", "link", "add", LINK, "type", "bridge"), "ip link add " + LINK);
    }
    try {
      check(run("ip", "addr", "add", ADDRESS + "/32", "dev", LINK), "ip addr add");
      check(run("ip", "link", "set", LINK, "up"), "ip link set up");
      HttpServer server =
          HttpServer.create(new InetSocketAddress(InetAddress.getByName(ADDRESS), 0), 16);
      byte[] body = BODY.getBytes(StandardCharsets.UTF_8);
      server.createContext(
          "/",
          exchange -> {
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
          });
      server.start();
      return new UpstreamDrill(server);
    } catch (IOException | RuntimeException e) {
      run("ip", "link", "del", LINK);
      throw e;
    }
  }

  int port() {
    return server.getAddress().getPort();
  }

  @Override
  public void close() throws IOException, InterruptedException {
    server.stop(0);
    run("ip", "link", "del", LINK);
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
