package dev.agentsandbox.bench;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The origin server every proxy under test forwards to: one loopback port, one virtual thread per
 * connection, and the first bytes choose what the connection does.
 *
 * <ul>
 *   <li>{@code STREAM!\n}: stream bytes until the peer goes away (tunnel throughput);
 *   <li>{@code ECHO!!!\n}: echo everything back (idle tunnels, which are probed for liveness);
 *   <li>{@code GET }: a minimal HTTP/1.1 keep-alive server with a fixed body (plain-HTTP rate);
 *   <li>end of stream at once: close (CONNECT set-up probes).
 * </ul>
 *
 * <p>One port keeps the allow-list the same shape for every proxy ({@code a.bench.test:PORT}).
 */
final class Upstream implements AutoCloseable {
  // Eight bytes, not four: a proxy may hold a tunnel's first bytes until it can tell whether they
  // are a TLS record header (five bytes), as ours does to check SNI, and TLS clients always send
  // more than that in their first write.
  static final byte[] STREAM = "STREAM!\n".getBytes(StandardCharsets.US_ASCII);
  static final byte[] ECHO = "ECHO!!!\n".getBytes(StandardCharsets.US_ASCII);
  static final int HTTP_BODY_BYTES = 1024;
  private static final int STREAM_CHUNK = 64 * 1024;

  private final ServerSocket server;
  private final ExecutorService connections = Executors.newVirtualThreadPerTaskExecutor();
  private final Set<Socket> open = ConcurrentHashMap.newKeySet();
  private final byte[] httpResponse;
  private final Thread acceptor;
  private final AtomicLong accepted = new AtomicLong();

  /** Listens on {@code bindAddress} at an ephemeral port and starts accepting. */
  Upstream(InetAddress bindAddress) throws IOException {
    server = new ServerSocket();
    server.bind(new InetSocketAddress(bindAddress, 0), 4096);
    byte[] body = new byte[HTTP_BODY_BYTES];
    Arrays.fill(body, (byte) 'x');
    byte[] head =
        ("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nCache-Control: no-store\r\n"
                + "Content-Length: "
                + body.length
                + "\r\n\r\n")
            .getBytes(StandardCharsets.US_ASCII);
    httpResponse = Arrays.copyOf(head, head.length + body.length);
    System.arraycopy(body, 0, httpResponse, head.length, body.length);
    acceptor = Thread.ofPlatform().name("upstream-accept").daemon().start(this::acceptLoop);
  }

  int port() {
    return server.getLocalPort();
  }

  /** Connections accepted so far; shows whether a proxy reuses its upstream connections. */
  long accepted() {
    return accepted.get();
  }

  private void acceptLoop() {
    while (!server.isClosed()) {
      try {
        Socket socket = server.accept();
        accepted.incrementAndGet();
        open.add(socket);
        connections.execute(() -> serve(socket));
      } catch (IOException e) {
        if (!server.isClosed()) {
          System.err.println("upstream accept on port " + port() + " failed: " + e.getMessage());
        }
      }
    }
  }

  private void serve(Socket socket) {
    try (socket;
        InputStream in = socket.getInputStream();
        OutputStream out = socket.getOutputStream()) {
      byte[] start = in.readNBytes(4);
      if (start.length < 4) {
        return;
      }
      if (new String(start, StandardCharsets.US_ASCII).equals("GET ")) {
        http(in, out);
        return;
      }
      byte[] rest = in.readNBytes(STREAM.length - start.length);
      byte[] command = Arrays.copyOf(start, start.length + rest.length);
      System.arraycopy(rest, 0, command, start.length, rest.length);
      if (Arrays.equals(command, STREAM)) {
        stream(out);
      } else if (Arrays.equals(command, ECHO)) {
        in.transferTo(out);
      }
    } catch (IOException e) {
      // The client closing mid-stream is how every throughput run ends.
    } finally {
      open.remove(socket);
    }
  }

  private static void stream(OutputStream out) throws IOException {
    byte[] chunk = new byte[STREAM_CHUNK];
    Arrays.fill(chunk, (byte) 's');
    while (true) {
      out.write(chunk);
    }
  }

  private void http(InputStream in, OutputStream out) throws IOException {
    HeadReader reader = new HeadReader(in);
    boolean first = true;
    while (true) {
      String head = reader.readHead();
      if (head == null) {
        return;
      }
      if (first) {
        head = "GET " + head;
        first = false;
      }
      out.write(httpResponse);
      out.flush();
      if (head.toLowerCase(Locale.ROOT).contains("\nconnection: close")) {
        return;
      }
    }
  }

  @Override
  public void close() throws IOException {
    server.close();
    for (Socket socket : open) {
      try {
        socket.close();
      } catch (SocketException e) {
        // already gone
      }
    }
    connections.shutdownNow();
    acceptor.interrupt();
  }
}
