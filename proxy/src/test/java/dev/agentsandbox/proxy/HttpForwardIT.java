package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Back-pressure on the plain-HTTP path: 32 MiB up as a request body and 32 MiB down as the response
 * through one absolute-form request, with a slow reader on each side, so both flows pause and
 * resume reading many times. A flow that loses a resume stalls here and the socket timeouts end the
 * test. Each case then sends a second request on the same client connection, which proves the
 * exchange ended in a state that serves the next request.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class HttpForwardIT {
  private static final int TOTAL = 32 * 1024 * 1024;
  private static final int CHUNK = 64 * 1024;

  private Fixture fixture;

  @BeforeAll
  void start() throws Exception {
    fixture = new Fixture();
  }

  @AfterAll
  void stop() {
    fixture.close();
  }

  /**
   * {@code early}: the upstream starts its response while the request body still streams up
   * (SENDING_AND_RECEIVING), and sends its last half only once the whole body arrived.
   */
  @ParameterizedTest(name = "response starts early: {0}")
  @ValueSource(booleans = {false, true})
  void thirtyTwoMebibytesEachWayStreamThroughAnAbsoluteFormRequest(boolean early) throws Exception {
    int port = Fixture.freePort(Fixture.PERMITTED);
    try (ServerSocket listener =
            new ServerSocket(port, 2, InetAddress.getByName(Fixture.PERMITTED));
        ProxyServer proxy =
            ProxyServer.start(
                fixture.config(
                    List.of("api.test:" + port), Optional.empty(), "127.0.0.1", 0, Limits.DEFAULTS),
                new StaticHostResolver(fixture.hosts),
                List.of(),
                new ProxyMetrics())) {
      listener.setSoTimeout(30_000);
      AtomicLong upstreamReceived = new AtomicLong();
      AtomicLong upstreamCrc = new AtomicLong();
      CompletableFuture<Void> upstream =
          CompletableFuture.runAsync(
              () -> serve(listener, early, upstreamReceived, upstreamCrc),
              Thread::startVirtualThread);
      InetSocketAddress at = proxy.boundAddress();
      try (Socket client = new Socket(at.getAddress(), at.getPort())) {
        client.setSoTimeout(30_000);
        OutputStream out = client.getOutputStream();
        out.write(
            ("POST http://api.test:"
                    + port
                    + "/bulk HTTP/1.1\r\nHost: api.test\r\nContent-Length: "
                    + TOTAL
                    + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        CompletableFuture<Long> upload =
            CompletableFuture.supplyAsync(
                () -> {
                  try {
                    return writePattern(out, TOTAL, 7);
                  } catch (IOException e) {
                    throw new IllegalStateException("uploading through the proxy failed", e);
                  }
                },
                Thread::startVirtualThread);
        InputStream in = client.getInputStream();
        String head = readHead(in);
        assertThat(head)
            .startsWith("HTTP/1.1 200")
            .containsIgnoringCase("content-length: " + TOTAL);
        CRC32 down = new CRC32();
        assertThat(readSlowly(in, TOTAL, down)).isEqualTo(TOTAL);
        assertThat(down.getValue()).isEqualTo(patternCrc(TOTAL, 11));
        assertThat(upload.get(60, TimeUnit.SECONDS)).isEqualTo(patternCrc(TOTAL, 7));
        upstream.get(60, TimeUnit.SECONDS);
        assertThat(upstreamReceived.get()).isEqualTo(TOTAL);
        assertThat(upstreamCrc.get()).isEqualTo(patternCrc(TOTAL, 7));

        // The same client connection serves the next request.
        CompletableFuture<Void> second =
            CompletableFuture.runAsync(() -> answerShortly(listener), Thread::startVirtualThread);
        out.write(
            ("GET http://api.test:" + port + "/after HTTP/1.1\r\nHost: api.test\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        out.flush();
        assertThat(Fixture.readResponse(in)).startsWith("HTTP/1.1 200").endsWith("after");
        second.get(60, TimeUnit.SECONDS);
      }
    }
  }

  /** The upstream's first connection: the bulk exchange. */
  private static void serve(
      ServerSocket listener, boolean early, AtomicLong received, AtomicLong crc) {
    try (Socket bulk = listener.accept()) {
      bulk.setSoTimeout(30_000);
      InputStream in = bulk.getInputStream();
      OutputStream out = bulk.getOutputStream();
      String head = readHead(in);
      if (!head.startsWith("POST /bulk ")) {
        throw new IllegalStateException("unexpected request: " + head);
      }
      byte[] responseHead =
          ("HTTP/1.1 200 OK\r\nContent-Length: " + TOTAL + "\r\n\r\n")
              .getBytes(StandardCharsets.US_ASCII);
      CRC32 up = new CRC32();
      if (early) {
        out.write(responseHead);
        // Half the response goes down while the body still streams up (read by another thread).
        CompletableFuture<Long> reader =
            CompletableFuture.supplyAsync(() -> readOrFail(in, up), Thread::startVirtualThread);
        Pattern pattern = new Pattern(11);
        pattern.write(out, TOTAL / 2);
        received.set(reader.get(60, TimeUnit.SECONDS));
        pattern.write(out, TOTAL - TOTAL / 2);
      } else {
        received.set(readSlowly(in, TOTAL, up));
        out.write(responseHead);
        new Pattern(11).write(out, TOTAL);
      }
      out.flush();
      crc.set(up.getValue());
    } catch (Exception e) {
      throw new IllegalStateException("the bulk upstream failed", e);
    }
  }

  /** The upstream's second connection: a short answer. */
  private static void answerShortly(ServerSocket listener) {
    try (Socket after = listener.accept()) {
      after.setSoTimeout(30_000);
      readHead(after.getInputStream());
      after
          .getOutputStream()
          .write(
              "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nafter"
                  .getBytes(StandardCharsets.US_ASCII));
    } catch (IOException e) {
      throw new IllegalStateException("the second upstream connection failed", e);
    }
  }

  private static long readOrFail(InputStream in, CRC32 crc) {
    try {
      return readSlowly(in, TOTAL, crc);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Reads {@code expected} bytes, pausing 2 ms every 256 KiB so the sender must wait. */
  private static long readSlowly(InputStream in, long expected, CRC32 crc) throws IOException {
    byte[] buffer = new byte[CHUNK];
    long read = 0;
    long nextPause = 256 * 1024;
    while (read < expected) {
      int n = in.read(buffer, 0, (int) Math.min(buffer.length, expected - read));
      if (n < 0) {
        break;
      }
      crc.update(buffer, 0, n);
      read += n;
      if (read >= nextPause) {
        nextPause += 256 * 1024;
        try {
          Thread.sleep(2);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IOException("interrupted", e);
        }
      }
    }
    return read;
  }

  private static String readHead(InputStream in) throws IOException {
    StringBuilder head = new StringBuilder();
    while (!head.toString().endsWith("\r\n\r\n")) {
      int b = in.read();
      if (b < 0 || head.length() > 16 * 1024) {
        throw new IOException("no complete head: " + head);
      }
      head.append((char) b);
    }
    return head.toString();
  }

  private static long writePattern(OutputStream out, int total, int seed) throws IOException {
    new Pattern(seed).write(out, total);
    out.flush();
    return patternCrc(total, seed);
  }

  private static long patternCrc(int total, int seed) {
    CRC32 crc = new CRC32();
    Pattern pattern = new Pattern(seed);
    byte[] chunk = new byte[CHUNK];
    for (int done = 0; done < total; done += chunk.length) {
      int n = Math.min(chunk.length, total - done);
      pattern.fill(chunk, n);
      crc.update(chunk, 0, n);
    }
    return crc.getValue();
  }

  /** A deterministic byte stream, so a lost, doubled or reordered chunk changes the checksum. */
  private static final class Pattern {
    private int state;

    Pattern(int seed) {
      this.state = seed;
    }

    void fill(byte[] chunk, int n) {
      for (int i = 0; i < n; i++) {
        state = state * 1_103_515_245 + 12_345;
        chunk[i] = (byte) (state >>> 16);
      }
    }

    void write(OutputStream out, int total) throws IOException {
      byte[] chunk = new byte[CHUNK];
      for (int done = 0; done < total; done += chunk.length) {
        int n = Math.min(chunk.length, total - done);
        fill(chunk, n);
        out.write(chunk, 0, n);
      }
    }
  }
}
