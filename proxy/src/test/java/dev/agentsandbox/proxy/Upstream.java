package dev.agentsandbox.proxy;

import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.net.ssl.SSLContext;

/**
 * A real HTTP (or HTTPS) server on a loopback address and an ephemeral port that answers {@code
 * hello from NAME} and records every request it received.
 */
final class Upstream implements AutoCloseable {
  /** One request as the upstream saw it. */
  record Seen(
      String method, String path, Map<String, List<String>> headers, String body, int clientPort) {
    String header(String name) {
      for (Map.Entry<String, List<String>> e : headers.entrySet()) {
        if (e.getKey().equalsIgnoreCase(name)) {
          return String.join(",", e.getValue());
        }
      }
      return null;
    }
  }

  private final HttpServer server;
  private final List<Seen> seen = new CopyOnWriteArrayList<>();

  private Upstream(HttpServer server, String name) {
    this.server = server;
    server.createContext(
        "/",
        exchange -> {
          String body;
          try (InputStream in = exchange.getRequestBody()) {
            body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
          }
          seen.add(
              new Seen(
                  exchange.getRequestMethod(),
                  exchange.getRequestURI().toString(),
                  Map.copyOf(exchange.getRequestHeaders()),
                  body,
                  exchange.getRemoteAddress().getPort()));
          byte[] answer = ("hello from " + name).getBytes(StandardCharsets.UTF_8);
          exchange.sendResponseHeaders(200, answer.length);
          exchange.getResponseBody().write(answer);
          exchange.close();
        });
    server.start();
  }

  static Upstream http(String address, String name) throws IOException {
    return http(address, name, 0);
  }

  static Upstream http(String address, String name, int port) throws IOException {
    return new Upstream(
        HttpServer.create(new InetSocketAddress(InetAddress.getByName(address), port), 16), name);
  }

  static Upstream https(String address, String name, SSLContext context) throws IOException {
    HttpsServer server =
        HttpsServer.create(new InetSocketAddress(InetAddress.getByName(address), 0), 16);
    server.setHttpsConfigurator(new HttpsConfigurator(context));
    return new Upstream(server, name);
  }

  int port() {
    return server.getAddress().getPort();
  }

  List<Seen> seen() {
    return List.copyOf(seen);
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
