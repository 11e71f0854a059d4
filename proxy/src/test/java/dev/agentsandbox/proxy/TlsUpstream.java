package dev.agentsandbox.proxy;

import com.sun.net.httpserver.HttpExchange;
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
 * A real HTTPS server on a loopback address standing in for an inspected host (a "GitHub"): it
 * records every request with its headers and answers by path — {@code /echo} with the request's
 * headers as text (an upstream that reflects what it was sent), {@code /redirect} with a 302 to
 * {@code Location: https://evil.test/...}, {@code /gzip} with the headers gzip-compressed whatever
 * was asked, {@code /large} with {@code size} bytes, anything else {@code hello from NAME at PATH}.
 */
final class TlsUpstream implements AutoCloseable {
  private final HttpsServer server;
  private final List<Upstream.Seen> seen = new CopyOnWriteArrayList<>();

  TlsUpstream(String address, String name, SSLContext context) throws IOException {
    server = HttpsServer.create(new InetSocketAddress(InetAddress.getByName(address), 0), 64);
    server.setHttpsConfigurator(new HttpsConfigurator(context));
    server.setExecutor(java.util.concurrent.Executors.newFixedThreadPool(8));
    server.createContext("/", exchange -> answer(exchange, name));
    server.start();
  }

  private void answer(HttpExchange exchange, String name) throws IOException {
    byte[] body;
    try (InputStream in = exchange.getRequestBody()) {
      body = in.readAllBytes();
    }
    String path = exchange.getRequestURI().getRawPath();
    seen.add(
        new Upstream.Seen(
            exchange.getRequestMethod(),
            exchange.getRequestURI().toString(),
            Map.copyOf(exchange.getRequestHeaders()),
            new String(body, StandardCharsets.UTF_8),
            exchange.getRemoteAddress().getPort()));
    byte[] answer;
    int status = 200;
    if (path.equals("/echo")) {
      StringBuilder text = new StringBuilder();
      exchange
          .getRequestHeaders()
          .forEach((key, values) -> text.append(key).append(": ").append(values).append('\n'));
      answer = text.toString().getBytes(StandardCharsets.UTF_8);
      exchange
          .getResponseHeaders()
          .add(
              "X-Echo-Authorization",
              String.valueOf(exchange.getRequestHeaders().getFirst("Authorization")));
    } else if (path.equals("/gzip")) {
      // Compressed whatever the request asked for, as an upstream that ignores Accept-Encoding.
      StringBuilder text = new StringBuilder();
      exchange
          .getRequestHeaders()
          .forEach((key, values) -> text.append(key).append(": ").append(values).append('\n'));
      java.io.ByteArrayOutputStream zipped = new java.io.ByteArrayOutputStream();
      try (java.util.zip.GZIPOutputStream gzip = new java.util.zip.GZIPOutputStream(zipped)) {
        gzip.write(text.toString().getBytes(StandardCharsets.UTF_8));
      }
      answer = zipped.toByteArray();
      exchange.getResponseHeaders().add("Content-Encoding", "gzip");
    } else if (path.equals("/redirect")) {
      exchange.getResponseHeaders().add("Location", "https://evil.test/steal");
      status = 302;
      answer = new byte[0];
    } else if (path.equals("/large")) {
      String query = exchange.getRequestURI().getRawQuery();
      int size = Integer.parseInt(query.substring("size=".length()));
      answer = new byte[size];
      java.util.Arrays.fill(answer, (byte) 'a');
    } else {
      answer =
          ("hello from " + name + " at " + exchange.getRequestURI())
              .getBytes(StandardCharsets.UTF_8);
    }
    exchange.sendResponseHeaders(status, answer.length == 0 ? -1 : answer.length);
    if (answer.length > 0) {
      exchange.getResponseBody().write(answer);
    }
    exchange.close();
  }

  int port() {
    return server.getAddress().getPort();
  }

  List<Upstream.Seen> seen() {
    return List.copyOf(seen);
  }

  @Override
  public void close() {
    server.stop(0);
    ((java.util.concurrent.ExecutorService) server.getExecutor()).shutdownNow();
  }
}
