package dev.agentsandbox.bench;

import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;

/**
 * Inspected hosts beside the opaque tunnel, in one run of one proxy (docs/benchmarks.md, "Inspected
 * hosts"): the set-up of one HTTPS request on a new connection (CONNECT, TLS, a GET, its answer),
 * one stream's throughput, and the memory an idle connection holds, for an opaque host, an
 * inspected host with rules, and one that also injects a credential. The upstream is a JDK HTTPS
 * server on 127.0.0.2 with a certificate {@code keytool} made for the run; the client trusts the
 * proxy's run CA (for the inspected hosts) and that certificate (for the opaque one), so every
 * column does the same TLS and HTTP work on the client's side. Every loop is bounded.
 */
public final class InspectBench {
  private static final String[] HOSTS = {"tunnel.test", "inspect.test", "inject.test"};
  private static final byte[] SMALL = "ok".getBytes(StandardCharsets.US_ASCII);

  private InspectBench() {}

  /**
   * {@code --jar JAR --java JAVA --java-opts OPTS --work DIR [--count N] [--idle N] [--seconds S]}.
   */
  public static void main(String[] args) throws Exception {
    Map<String, String> options = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      options.put(args[i], args[i + 1]);
    }
    Path work = Path.of(options.get("--work"));
    int count = Integer.parseInt(options.getOrDefault("--count", "1000"));
    int idle = Integer.parseInt(options.getOrDefault("--idle", "500"));
    int seconds = Integer.parseInt(options.getOrDefault("--seconds", "10"));
    String load = loadAverage();
    Path keystore = work.resolve("upstream.p12");
    keytool(
        "-genkeypair",
        "-alias",
        "upstream",
        "-keyalg",
        "EC",
        "-groupname",
        "secp256r1",
        "-dname",
        "CN=tunnel.test",
        "-ext",
        "SAN=dns:tunnel.test,dns:inspect.test,dns:inject.test",
        "-validity",
        "2",
        "-keystore",
        keystore.toString(),
        "-storetype",
        "PKCS12",
        "-storepass",
        "bench1",
        "-keypass",
        "bench1");
    Path upstreamPem = work.resolve("upstream.pem");
    keytool(
        "-exportcert",
        "-rfc",
        "-alias",
        "upstream",
        "-keystore",
        keystore.toString(),
        "-storepass",
        "bench1",
        "-file",
        upstreamPem.toString());
    HttpsServer upstream = upstream(keystore);
    try {
      int port = upstream.getAddress().getPort();
      Path credentials = Files.createDirectories(work.resolve("proxy-credentials"));
      Files.writeString(credentials.resolve("token"), "ghs_bench0token0value0that0is0long0enough");
      Path policy = work.resolve("policy.json");
      Files.writeString(policy, policy(port, credentials, Files.readString(upstreamPem)));
      List<String> command = new ArrayList<>(List.of(options.get("--java")));
      command.addAll(List.of(options.get("--java-opts").trim().split("\\s+")));
      command.addAll(List.of("-jar", options.get("--jar"), "--policy", policy.toString()));
      Process proxy =
          new ProcessBuilder(command)
              .redirectOutput(work.resolve("decisions.jsonl").toFile())
              .redirectError(work.resolve("proxy.err").toFile())
              .start();
      Files.writeString(work.resolve("pids"), proxy.pid() + "\n");
      try {
        int proxyPort = awaitReady(work.resolve("proxy.err"));
        SSLContext client = client(work.resolve("proxy.err"), upstreamPem);
        InetSocketAddress at = new InetSocketAddress("127.0.0.1", proxyPort);
        Map<String, LatencySummary> setup = new LinkedHashMap<>();
        Map<String, Double> throughput = new LinkedHashMap<>();
        Map<String, Double> cpu = new LinkedHashMap<>();
        Map<String, Long> idleKib = new LinkedHashMap<>();
        for (String host : HOSTS) {
          setup.put(host, setup(at, host, port, client, count / 5, count));
        }
        long clk = Long.parseLong(options.getOrDefault("--clk-tck", "100"));
        for (String host : HOSTS) {
          long ticks = ProcStats.cpuTicks(proxy.pid());
          long[] moved = stream(at, host, port, client, Duration.ofSeconds(seconds));
          double cpuSeconds = (ProcStats.cpuTicks(proxy.pid()) - ticks) / (double) clk;
          throughput.put(host, moved[0] / 1e6 / (moved[1] / 1e9));
          cpu.put(host, cpuSeconds / (moved[0] / 1e9));
        }
        for (String host : HOSTS) {
          idleKib.put(host, idle(proxy.pid(), at, host, port, client, idle));
        }
        print(options, load, count, idle, seconds, setup, throughput, cpu, idleKib);
      } finally {
        proxy.destroy();
        proxy.waitFor(20, TimeUnit.SECONDS);
      }
    } finally {
      upstream.stop(0);
      ((java.util.concurrent.ExecutorService) upstream.getExecutor()).shutdownNow();
    }
  }

  private static String policy(int port, Path credentials, String pem) {
    String allow =
        String.join(
            ",", java.util.Arrays.stream(HOSTS).map(h -> "\"" + h + ":" + port + "\"").toList());
    String hosts =
        String.join(
            ",", java.util.Arrays.stream(HOSTS).map(h -> "\"" + h + "\":[\"127.0.0.2\"]").toList());
    return "{\"listen\":\"127.0.0.1:0\",\"allow\":["
        + allow
        + "],"
        + "\"internal\":[{\"cidr\":\"127.0.0.2/32\",\"ports\":["
        + port
        + "]}],"
        + "\"hosts\":{"
        + hosts
        + "},\"run_id\":\"inspect-bench\",\"decisions\":\"-\","
        + "\"limits\":{\"max_connections\":4096},"
        + "\"inspect\":{\"hosts\":{"
        + "\"inspect.test\":{\"rules\":[\"GET,HEAD /small\",\"GET /stream\"]},"
        + "\"inject.test\":{\"rules\":[\"GET,HEAD /small\",\"GET /stream\"],\"credential\":\"token\"}},"
        + "\"ca_expires_at\":\""
        + Instant.now().plus(Duration.ofHours(2))
        + "\","
        + "\"credentials_dir\":\""
        + credentials
        + "\","
        + "\"upstream_ca\":"
        + jsonString(pem)
        + "}}";
  }

  /**
   * A JSON string: quote, backslash and every control character escaped (keytool's PEM has CRLF).
   */
  private static String jsonString(String text) {
    StringBuilder out = new StringBuilder("\"");
    for (char c : text.toCharArray()) {
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        default -> {
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    return out.append('"').toString();
  }

  /** {@code /small} answers two bytes; {@code /stream} 64 KiB chunks until the client leaves. */
  private static HttpsServer upstream(Path keystore) throws Exception {
    KeyStore store = KeyStore.getInstance("PKCS12");
    try (InputStream in = Files.newInputStream(keystore)) {
      store.load(in, "bench1".toCharArray());
    }
    KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    keys.init(store, "bench1".toCharArray());
    SSLContext tls = SSLContext.getInstance("TLS");
    tls.init(keys.getKeyManagers(), null, null);
    HttpsServer server =
        HttpsServer.create(new InetSocketAddress(InetAddress.getByName("127.0.0.2"), 0), 4096);
    server.setHttpsConfigurator(new HttpsConfigurator(tls));
    server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
    server.createContext(
        "/small",
        exchange -> {
          exchange.sendResponseHeaders(200, SMALL.length);
          exchange.getResponseBody().write(SMALL);
          exchange.close();
        });
    byte[] chunk = new byte[64 * 1024];
    server.createContext(
        "/stream",
        exchange -> {
          exchange.sendResponseHeaders(200, 0);
          try (OutputStream out = exchange.getResponseBody()) {
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (System.nanoTime() < until) {
              out.write(chunk);
            }
          } catch (IOException leftEarly) {
            // The client has its window's bytes and closed.
          }
          exchange.close();
        });
    server.start();
    return server;
  }

  private static int awaitReady(Path err) throws Exception {
    for (int i = 0; i < 600; i++) {
      for (String line : Files.readAllLines(err)) {
        int at = line.indexOf("agent-sandbox proxy ready on ");
        if (at >= 0) {
          return Integer.parseInt(line.substring(line.lastIndexOf(':') + 1).strip());
        }
      }
      Thread.sleep(50);
    }
    throw new IOException("starting the proxy: no ready line within 30 s (see " + err + ")");
  }

  /** Trusts the run CA the proxy announced and the upstream's own certificate. */
  private static SSLContext client(Path err, Path upstreamPem) throws Exception {
    String line =
        Files.readAllLines(err).stream()
            .filter(l -> l.startsWith("agent-sandbox proxy run CA certificate "))
            .findFirst()
            .orElseThrow(() -> new IOException("the proxy announced no run CA"));
    byte[] der = java.util.Base64.getDecoder().decode(line.substring(line.lastIndexOf(' ') + 1));
    CertificateFactory x509 = CertificateFactory.getInstance("X.509");
    KeyStore anchors = KeyStore.getInstance("PKCS12");
    anchors.load(null, null);
    anchors.setCertificateEntry(
        "run", x509.generateCertificate(new java.io.ByteArrayInputStream(der)));
    try (InputStream in = Files.newInputStream(upstreamPem)) {
      anchors.setCertificateEntry("upstream", (X509Certificate) x509.generateCertificate(in));
    }
    TrustManagerFactory trust =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    trust.init(anchors);
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(null, trust.getTrustManagers(), null);
    return context;
  }

  /** A CONNECT, TLS inside it (SNI and name checked), ready for HTTP/1.1. */
  private static SSLSocket open(InetSocketAddress proxy, String host, int port, SSLContext tls)
      throws IOException {
    Socket socket = new Socket(proxy.getAddress(), proxy.getPort());
    socket.setSoTimeout(20_000);
    socket.setTcpNoDelay(true);
    String target = host + ":" + port;
    socket
        .getOutputStream()
        .write(
            ("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
    String head = head(socket.getInputStream());
    if (!head.startsWith("HTTP/1.1 200")) {
      socket.close();
      throw new IOException(
          "CONNECT " + target + ": " + head.lines().findFirst().orElse("(nothing)"));
    }
    SSLSocket ssl = (SSLSocket) tls.getSocketFactory().createSocket(socket, host, port, true);
    SSLParameters parameters = ssl.getSSLParameters();
    parameters.setServerNames(List.of(new SNIHostName(host)));
    parameters.setEndpointIdentificationAlgorithm("HTTPS");
    parameters.setApplicationProtocols(new String[] {"http/1.1"});
    ssl.setSSLParameters(parameters);
    ssl.startHandshake();
    return ssl;
  }

  private static String head(InputStream in) throws IOException {
    StringBuilder head = new StringBuilder();
    while (!head.toString().endsWith("\r\n\r\n")) {
      int b = in.read();
      if (b < 0) {
        break;
      }
      head.append((char) b);
      if (head.length() > 16 * 1024) {
        throw new IOException("an answer head over 16 KiB");
      }
    }
    return head.toString();
  }

  /** GET {@code path}; reads the head and a Content-Length body of {@code SMALL}'s size. */
  private static void getSmall(SSLSocket socket, String host, int port, boolean close)
      throws IOException {
    socket
        .getOutputStream()
        .write(
            ("GET /small HTTP/1.1\r\nHost: "
                    + host
                    + ":"
                    + port
                    + "\r\n"
                    + (close ? "Connection: close\r\n" : "")
                    + "\r\n")
                .getBytes(StandardCharsets.US_ASCII));
    String head = head(socket.getInputStream());
    if (!head.startsWith("HTTP/1.1 200")) {
      throw new IOException(
          "GET /small on " + host + ": " + head.lines().findFirst().orElse("(nothing)"));
    }
    byte[] body = socket.getInputStream().readNBytes(SMALL.length);
    if (body.length != SMALL.length) {
      throw new IOException("GET /small on " + host + ": a short body");
    }
  }

  /** New connection, CONNECT, TLS, one GET and its answer, {@code count} times after a warm-up. */
  private static LatencySummary setup(
      InetSocketAddress proxy, String host, int port, SSLContext tls, int warmup, int count)
      throws IOException {
    long[] samples = new long[count];
    for (int i = -warmup; i < count; i++) {
      long begin = System.nanoTime();
      try (SSLSocket socket = open(proxy, host, port, tls)) {
        getSmall(socket, host, port, true);
      }
      long end = System.nanoTime();
      if (i >= 0) {
        samples[i] = end - begin;
      }
    }
    return LatencySummary.of(samples);
  }

  /** One stream read for {@code window} after its first byte: {bytes, nanos}. */
  private static long[] stream(
      InetSocketAddress proxy, String host, int port, SSLContext tls, Duration window)
      throws IOException {
    try (SSLSocket socket = open(proxy, host, port, tls)) {
      socket
          .getOutputStream()
          .write(
              ("GET /stream HTTP/1.1\r\nHost: " + host + ":" + port + "\r\n\r\n")
                  .getBytes(StandardCharsets.US_ASCII));
      InputStream in = socket.getInputStream();
      head(in);
      byte[] buffer = new byte[64 * 1024];
      long bytes = 0;
      long begin = System.nanoTime();
      long until = begin + window.toNanos();
      long now = begin;
      while (now < until) {
        int n = in.read(buffer);
        if (n < 0) {
          break;
        }
        bytes += n;
        now = System.nanoTime();
      }
      return new long[] {bytes, now - begin};
    }
  }

  /** The proxy's resident memory per idle connection (one request done, kept alive), in KiB. */
  private static long idle(
      long pid, InetSocketAddress proxy, String host, int port, SSLContext tls, int count)
      throws Exception {
    settle();
    long before = ProcStats.rssKib(pid);
    List<SSLSocket> open = new ArrayList<>();
    try {
      for (int i = 0; i < count; i++) {
        SSLSocket socket = open(proxy, host, port, tls);
        getSmall(socket, host, port, false);
        open.add(socket);
      }
      settle();
      return (ProcStats.rssKib(pid) - before) / count;
    } finally {
      for (SSLSocket socket : open) {
        socket.close();
      }
      settle();
    }
  }

  private static void settle() throws InterruptedException {
    Thread.sleep(3000);
  }

  private static void keytool(String... args) throws Exception {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
    command.addAll(List.of(args));
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!process.waitFor(60, TimeUnit.SECONDS) || process.exitValue() != 0) {
      throw new IOException("keytool " + String.join(" ", args) + " failed: " + out);
    }
  }

  private static String loadAverage() throws IOException {
    return Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+", 4)[0]
        + " "
        + Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+", 4)[1]
        + " "
        + Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+", 4)[2];
  }

  private static void print(
      Map<String, String> options,
      String load,
      int count,
      int idle,
      int seconds,
      Map<String, LatencySummary> setup,
      Map<String, Double> throughput,
      Map<String, Double> cpu,
      Map<String, Long> idleKib)
      throws IOException {
    StringBuilder out = new StringBuilder();
    out.append("- load average before: ")
        .append(load)
        .append("; after: ")
        .append(loadAverage())
        .append('\n');
    out.append("- ")
        .append(count)
        .append(" set-ups per host (a fifth more untimed first), ")
        .append(seconds)
        .append(" s per stream, ")
        .append(idle)
        .append(" idle connections per host\n\n");
    out.append(
        "| | opaque tunnel | inspected (rules) | inspected + injected |\n|---|---:|---:|---:|\n");
    out.append(row("set-up p50 (CONNECT, TLS, GET, answer)", setup, s -> ms(s.p50Nanos())));
    out.append(row("set-up p99", setup, s -> ms(s.p99Nanos())));
    out.append("| extra set-up p50 over the tunnel | — | ")
        .append(ms(setup.get(HOSTS[1]).p50Nanos() - setup.get(HOSTS[0]).p50Nanos()))
        .append(" | ")
        .append(ms(setup.get(HOSTS[2]).p50Nanos() - setup.get(HOSTS[0]).p50Nanos()))
        .append(" |\n");
    out.append(row("one stream, MB/s", throughput, v -> String.format(Locale.ROOT, "%.0f", v)));
    out.append("| one stream, share of the tunnel's | 100 % | ")
        .append(
            String.format(
                Locale.ROOT, "%.0f %%", 100 * throughput.get(HOSTS[1]) / throughput.get(HOSTS[0])))
        .append(" | ")
        .append(
            String.format(
                Locale.ROOT, "%.0f %%", 100 * throughput.get(HOSTS[2]) / throughput.get(HOSTS[0])))
        .append(" |\n");
    out.append(row("proxy CPU s per GB", cpu, v -> String.format(Locale.ROOT, "%.2f", v)));
    out.append(row("RSS per idle connection, KiB", idleKib, v -> Long.toString(v)));
    System.out.print(out);
    if (options.containsKey("--out")) {
      Files.writeString(Path.of(options.get("--out")), out.toString());
    }
  }

  private static <T> String row(
      String name, Map<String, T> values, java.util.function.Function<T, String> shown) {
    StringBuilder row = new StringBuilder("| ").append(name);
    for (String host : HOSTS) {
      row.append(" | ").append(shown.apply(values.get(host)));
    }
    return row.append(" |\n").toString();
  }

  private static String ms(long nanos) {
    return String.format(Locale.ROOT, "%.2f ms", nanos / 1e6);
  }
}
