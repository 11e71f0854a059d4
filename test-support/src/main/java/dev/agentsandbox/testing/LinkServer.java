package dev.agentsandbox.testing;

import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

/**
 * An HTTP server answering every request with one fixed body, on an address of this host: either on
 * its own port-less link that the server adds and removes ({@link #onLink}), or on an address the
 * host already has ({@link #on}). Nothing it does reaches past this host.
 */
public final class LinkServer implements AutoCloseable {
  private final HttpServer server;
  private final String address;
  private final String link;

  private LinkServer(HttpServer server, String address, String link) {
    this.server = server;
    this.address = address;
    this.link = link;
  }

  /** Adds {@code link} carrying {@code address}/32 and serves {@code body} there. */
  public static LinkServer onLink(String link, String address, String body)
      throws IOException, InterruptedException {
    Host.addLink(link, address);
    try {
      return new LinkServer(serve(address, body), address, link);
    } catch (IOException | RuntimeException e) {
      Host.deleteLink(link);
      throw e;
    }
  }

  /**
   * Serves {@code body} on an address the host has ({@code "::"}: every address, both families).
   */
  public static LinkServer on(String address, String body) throws IOException {
    return new LinkServer(serve(address, body), address, null);
  }

  private static HttpServer serve(String address, String body) throws IOException {
    HttpServer server =
        HttpServer.create(new InetSocketAddress(InetAddress.getByName(address), 0), 16);
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    server.createContext(
        "/",
        exchange -> {
          exchange.sendResponseHeaders(200, bytes.length);
          exchange.getResponseBody().write(bytes);
          exchange.close();
        });
    server.start();
    return server;
  }

  /** Answers requests under {@code path} with {@code handler} instead of the fixed body. */
  public void handle(String path, HttpHandler handler) {
    server.createContext(path, handler);
  }

  public String address() {
    return address;
  }

  public int port() {
    return server.getAddress().getPort();
  }

  /** Stops the server, then removes its link if it added one. */
  @Override
  public void close() throws IOException, InterruptedException {
    server.stop(0);
    if (link != null) {
      Host.deleteLink(link);
    }
  }
}
