package dev.agentsandbox.bench;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

/** The measured loads; each one is bounded in count and in time. */
final class Workloads {
  private Workloads() {}

  /**
   * Times {@code count} sequential CONNECT attempts to {@code host}, from the start of the TCP
   * connect to the end of the proxy's answer head, after {@code warmup} untimed ones. Every answer
   * must carry {@code expectedStatus}, or the proxies would not be doing the same work.
   */
  static long[] setupLatencies(Route route, String host, int expectedStatus, int warmup, int count)
      throws IOException {
    long[] samples = new long[count];
    for (int i = -warmup; i < count; i++) {
      long begin = System.nanoTime();
      Route.Attempt attempt = route.connect(host);
      long end = System.nanoTime();
      attempt.socket().close();
      if (attempt.status() != expectedStatus) {
        throw new IOException(
            "CONNECT "
                + host
                + " via "
                + route.label()
                + ": status "
                + attempt.status()
                + " (expected "
                + expectedStatus
                + "; the proxies must share one allow-list)");
      }
      if (i >= 0) {
        samples[i] = end - begin;
      }
    }
    return samples;
  }

  /** Bytes moved through tunnels in a fixed time, and the proxy's CPU ticks meanwhile. */
  record Throughput(int streams, long bytes, long nanos, OptionalLong proxyCpuTicks) {
    double megabytesPerSecond() {
      return bytes / 1e6 / (nanos / 1e9);
    }
  }

  /**
   * Opens {@code streams} tunnels to the streaming upstream, then reads from all of them for {@code
   * duration}; the proxy's CPU time is sampled right before and after the timed window.
   */
  static Throughput throughput(Route route, int streams, Duration duration, OptionalLong proxyPid)
      throws IOException, InterruptedException {
    List<Socket> sockets = new ArrayList<>();
    try {
      for (int i = 0; i < streams; i++) {
        sockets.add(route.tunnel(Upstream.STREAM));
      }
      CountDownLatch go = new CountDownLatch(1);
      AtomicLong total = new AtomicLong();
      List<Thread> readers = new ArrayList<>();
      List<IOException> failures = new ArrayList<>();
      long[] window = new long[1];
      for (Socket socket : sockets) {
        readers.add(
            Thread.ofPlatform()
                .name("stream-reader")
                .start(
                    () -> {
                      byte[] buffer = new byte[64 * 1024];
                      long bytes = 0;
                      try {
                        InputStream in = socket.getInputStream();
                        go.await();
                        long deadline = window[0] + duration.toNanos();
                        while (System.nanoTime() < deadline) {
                          int read = in.read(buffer);
                          if (read < 0) {
                            throw new IOException("stream ended early via " + route.label());
                          }
                          bytes += read;
                        }
                      } catch (IOException e) {
                        synchronized (failures) {
                          failures.add(e);
                        }
                      } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                      }
                      total.addAndGet(bytes);
                    }));
      }
      long cpuBefore = proxyPid.isPresent() ? ProcStats.cpuTicks(proxyPid.getAsLong()) : 0;
      window[0] = System.nanoTime();
      go.countDown();
      for (Thread reader : readers) {
        reader.join(duration.toMillis() + 30_000);
      }
      long elapsed = System.nanoTime() - window[0];
      OptionalLong cpu =
          proxyPid.isPresent()
              ? OptionalLong.of(ProcStats.cpuTicks(proxyPid.getAsLong()) - cpuBefore)
              : OptionalLong.empty();
      synchronized (failures) {
        if (!failures.isEmpty()) {
          throw failures.get(0);
        }
      }
      return new Throughput(streams, total.get(), elapsed, cpu);
    } finally {
      closeAll(sockets);
    }
  }

  /** Resident memory of the proxy with idle tunnels open, per stage. */
  record IdleStage(int tunnels, long rssKib, int probed, int alive) {}

  /**
   * Opens tunnels to the echo upstream up to each stage's count, sends the echo command on each (so
   * every tunnel has carried data once), waits {@code settle}, reads the proxy's RSS, then probes
   * every 50th tunnel with an echo to prove the tunnels were still open when measured.
   */
  static List<IdleStage> idleTunnels(Route route, long proxyPid, int[] stages, Duration settle)
      throws IOException, InterruptedException {
    List<Socket> sockets = new ArrayList<>();
    List<IdleStage> results = new ArrayList<>();
    try {
      for (int stage : stages) {
        while (sockets.size() < stage) {
          sockets.add(route.tunnel(Upstream.ECHO));
        }
        Thread.sleep(settle);
        long rss = ProcStats.rssKib(proxyPid);
        int probed = 0;
        int alive = 0;
        for (int i = 0; i < sockets.size(); i += 50) {
          probed++;
          if (echoes(sockets.get(i))) {
            alive++;
          }
        }
        results.add(new IdleStage(stage, rss, probed, alive));
      }
      return results;
    } finally {
      closeAll(sockets);
    }
  }

  private static boolean echoes(Socket socket) {
    byte[] ping = "ping".getBytes(StandardCharsets.US_ASCII);
    try {
      socket.getOutputStream().write(ping);
      socket.getOutputStream().flush();
      byte[] answer = socket.getInputStream().readNBytes(ping.length);
      return java.util.Arrays.equals(ping, answer);
    } catch (IOException e) {
      return false;
    }
  }

  /** Requests answered in a fixed time over keep-alive connections, and connections opened. */
  record HttpRate(int connections, long requests, long connectionsOpened, long nanos) {
    double requestsPerSecond() {
      return requests / (nanos / 1e9);
    }
  }

  /**
   * Runs {@code connections} clients that each send GET after GET for {@code duration}, reusing the
   * connection while the answer allows it and opening a new one when it does not.
   */
  static HttpRate httpRate(Route route, int connections, Duration duration)
      throws InterruptedException, IOException {
    AtomicLong requests = new AtomicLong();
    AtomicLong opened = new AtomicLong();
    List<Throwable> failures = new ArrayList<>();
    byte[] request = route.httpRequest();
    long begin = System.nanoTime();
    long deadline = begin + duration.toNanos();
    List<Thread> clients = new ArrayList<>();
    for (int c = 0; c < connections; c++) {
      clients.add(
          Thread.ofPlatform()
              .name("http-client")
              .start(
                  () -> {
                    try {
                      runHttpClient(route, request, deadline, requests, opened);
                    } catch (IOException | UncheckedIOException e) {
                      synchronized (failures) {
                        failures.add(e);
                      }
                    }
                  }));
    }
    for (Thread client : clients) {
      client.join(duration.toMillis() + 30_000);
    }
    long elapsed = System.nanoTime() - begin;
    synchronized (failures) {
      if (!failures.isEmpty()) {
        Throwable first = failures.get(0);
        throw first instanceof IOException io ? io : new IOException(first);
      }
    }
    return new HttpRate(connections, requests.get(), opened.get(), elapsed);
  }

  private static void runHttpClient(
      Route route, byte[] request, long deadline, AtomicLong requests, AtomicLong opened)
      throws IOException {
    Socket socket = null;
    HeadReader reader = null;
    int answeredOnConnection = 0;
    try {
      while (System.nanoTime() < deadline) {
        if (socket == null) {
          socket = route.httpConnection();
          reader = new HeadReader(socket.getInputStream());
          opened.incrementAndGet();
          answeredOnConnection = 0;
        }
        String head;
        try {
          OutputStream out = socket.getOutputStream();
          out.write(request);
          out.flush();
          head = reader.readHead();
        } catch (IOException e) {
          if (answeredOnConnection == 0) {
            throw e;
          }
          head = null; // a reset on a reused connection is retried like a clean close
        }
        if (head == null) {
          if (answeredOnConnection == 0) {
            throw new IOException("HTTP via " + route.label() + ": connection closed, no answer");
          }
          // A server may close an idle keep-alive connection without saying so beforehand;
          // clients retry an idempotent GET on a new connection (RFC 9112, section 9.3.1).
          socket.close();
          socket = null;
          continue;
        }
        answeredOnConnection++;
        int status = Route.statusOf(head);
        if (status != 200) {
          throw new IOException("HTTP via " + route.label() + ": status " + status);
        }
        String lower = head.toLowerCase(Locale.ROOT);
        reader.skip(contentLength(lower, route.label()));
        requests.incrementAndGet();
        boolean http10 = lower.startsWith("http/1.0");
        boolean close =
            lower.contains("\nconnection: close")
                || lower.contains("\nproxy-connection: close")
                || (http10 && !lower.contains("\nconnection: keep-alive"));
        if (close) {
          socket.close();
          socket = null;
        }
      }
    } finally {
      if (socket != null) {
        socket.close();
      }
    }
  }

  private static long contentLength(String lowerHead, String label) throws IOException {
    int at = lowerHead.indexOf("\ncontent-length:");
    if (at < 0) {
      throw new IOException(
          "HTTP via " + label + ": answer has no Content-Length (chunked answers are not read)");
    }
    int end = lowerHead.indexOf('\r', at + 1);
    String value =
        lowerHead.substring(at + "\ncontent-length:".length(), end < 0 ? lowerHead.length() : end);
    return Long.parseLong(value.trim());
  }

  private static void closeAll(List<Socket> sockets) {
    for (Socket socket : sockets) {
      try {
        socket.close();
      } catch (IOException e) {
        // closing is best effort; the proxy sees the reset either way
      }
    }
  }
}
