import java.io.*;
import java.net.*;
import java.nio.file.*;
import java.util.*;
import java.util.concurrent.atomic.*;

/**
 * A/B of proxy builds on loopback, alternated in every round: each round starts each jar as a
 * process (with PROXY_JAVA_OPTS, by default the proxy image's flags as bench/proxy-bench.sh uses
 * them, plus OPTS_i for the i-th jar), measures its idle RSS, the RSS added by 1,000 idle tunnels,
 * CONNECT set-up allowed and refused (p50/p99 after 200 warm-ups), one tunnel's download
 * throughput and the proxy's CPU seconds per GB over SECONDS, then stops it. Prints each round and
 * the medians. Sends traffic only to 127.0.0.1 (the proxy) and 127.0.0.2 (its upstreams).
 *
 * <p>Usage: java bench/proxy-ab/ProxyAB.java ROUNDS SECONDS SETUPS JAR[=LABEL]...
 */
public class ProxyAB {
  static final InetAddress UP = addr("127.0.0.2");

  static InetAddress addr(String s) {
    try { return InetAddress.getByName(s); } catch (Exception e) { throw new RuntimeException(e); }
  }

  public static void main(String[] a) throws Exception {
    int rounds = Integer.parseInt(a[0]);
    int seconds = Integer.parseInt(a[1]);
    int setups = Integer.parseInt(a[2]);
    if (rounds < 1 || rounds > 50 || seconds < 1 || seconds > 60 || setups < 1 || setups > 100_000) {
      throw new IllegalArgumentException("ROUNDS 1-50, SECONDS 1-60, SETUPS 1-100000");
    }
    List<String> jars = Arrays.asList(a).subList(3, a.length);
    ServerSocket stream = new ServerSocket(0, 512, UP);
    ServerSocket sink = new ServerSocket(0, 512, UP);
    serve(stream, true);
    serve(sink, false);
    Path dir = Files.createTempDirectory("relayab");
    Path hosts = dir.resolve("hosts");
    Files.writeString(hosts, "127.0.0.2 a.bench.test b.bench.test c.bench.test\n");
    String java = ProcessHandle.current().info().command().orElseThrow();
    String opts = System.getenv().getOrDefault("PROXY_JAVA_OPTS",
        "-XX:-UsePerfData -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 -Xss512k -XX:MaxRAMPercentage=70 -XX:MaxMetaspaceSize=64m -XX:ReservedCodeCacheSize=24m -XX:TrimNativeHeapInterval=2000 -XX:MaxRAM=256m");
    Map<String, List<double[]>> results = new LinkedHashMap<>();
    for (int r = 0; r < rounds; r++) {
      for (int j = 0; j < jars.size(); j++) {
        String spec = jars.get(j);
        String jar = spec.contains("=") ? spec.substring(0, spec.indexOf('=')) : spec;
        String label = spec.contains("=") ? spec.substring(spec.indexOf('=') + 1) : jar;
        String extra = System.getenv().getOrDefault("OPTS_" + j, "");
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) { port = s.getLocalPort(); }
        List<String> cmd = new ArrayList<>();
        cmd.add(java);
        cmd.addAll(Arrays.asList(opts.trim().split("\\s+")));
        if (!extra.isBlank()) cmd.addAll(Arrays.asList(extra.trim().split("\\s+")));
        cmd.addAll(List.of("-jar", jar, "--listen", "127.0.0.1:" + port,
            "--allow", "a.bench.test:" + stream.getLocalPort() + ",b.bench.test:" + sink.getLocalPort(),
            "--internal-cidr", "127.0.0.2/32:" + stream.getLocalPort(),
            "--internal-cidr", "127.0.0.2/32:" + sink.getLocalPort(),
            "--hosts", hosts.toString(), "--decisions", dir.resolve("decisions-" + j + ".jsonl").toString(),
            "--max-connections", "8000"));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
            .redirectOutput(dir.resolve("proxy-" + j + ".out").toFile()).start();
        try {
          waitListening(port, p);
          String load = Files.readString(Path.of("/proc/loadavg")).trim();
          Thread.sleep(500);
          double rss0 = rss(p.pid());
          List<Socket> idle = new ArrayList<>();
          for (int i = 0; i < 1000; i++) idle.add(connect(port, "b.bench.test:" + sink.getLocalPort(), 200));
          Thread.sleep(1500);
          double rss1 = rss(p.pid());
          for (Socket s : idle) s.close();
          double perTunnel = (rss1 - rss0) * 1024 / 1000;
          long[] allowed = setup(port, "b.bench.test:" + sink.getLocalPort(), 200, setups, 200);
          long[] refused = setup(port, "c.bench.test:" + sink.getLocalPort(), 200, setups, 403);
          double[] tp = throughput(port, "a.bench.test:" + stream.getLocalPort(), seconds, p.pid());
          double rss2 = rss(p.pid());
          double[] row = {pct(allowed, 50), pct(allowed, 99), pct(refused, 50), pct(refused, 99), tp[0], tp[1], rss0, perTunnel, rss2};
          results.computeIfAbsent(label, k -> new ArrayList<>()).add(row);
          System.out.printf("round %d %-12s allowed %6.0f/%6.0f us refused %6.0f/%6.0f us  1-stream %7.1f MB/s  cpu %.2f s/GB  rss %.1f MiB idle-tunnel %.1f KiB rss-after %.1f MiB load %s%n",
              r, label, row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8], load);
        } finally {
          p.destroy();
          p.waitFor();
        }
      }
    }
    System.out.println("medians:");
    for (var e : results.entrySet()) {
      double[] m = new double[9];
      for (int k = 0; k < 9; k++) {
        final int kk = k;
        double[] v = e.getValue().stream().mapToDouble(x -> x[kk]).sorted().toArray();
        m[k] = v[v.length / 2];
      }
      System.out.printf("%-12s allowed p50 %6.0f p99 %6.0f | refused p50 %6.0f p99 %6.0f | %7.1f MB/s | %.2f CPU s/GB | rss %.1f MiB | %.1f KiB/idle tunnel | rss after %.1f MiB (n=%d)%n",
          e.getKey(), m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8], e.getValue().size());
    }
    System.out.println("load at end: " + Files.readString(Path.of("/proc/loadavg")).trim());
    System.exit(0);
  }

  static double pct(long[] v, int p) {
    long[] s = v.clone();
    Arrays.sort(s);
    return s[Math.min(s.length - 1, (int) Math.ceil(p / 100.0 * s.length) - 1)] / 1000.0;
  }

  static void waitListening(int port, Process p) throws Exception {
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (System.nanoTime() < deadline) {
      if (!p.isAlive()) throw new IOException("proxy exited " + p.exitValue());
      try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) { return; } catch (IOException e) { Thread.sleep(20); }
    }
    throw new IOException("proxy not listening");
  }

  static void serve(ServerSocket server, boolean streaming) {
    Thread.ofPlatform().daemon().start(() -> {
      while (true) {
        try {
          Socket s = server.accept();
          Thread.ofPlatform().daemon().start(() -> {
            try (s) {
              if (streaming) {
                byte[] chunk = new byte[256 * 1024];
                OutputStream out = s.getOutputStream();
                while (true) out.write(chunk); // until the reader closes
              } else {
                InputStream in = s.getInputStream();
                byte[] b = new byte[4096];
                while (in.read(b) >= 0) { }
              }
            } catch (IOException ignored) { }
          });
        } catch (IOException e) { return; }
      }
    });
  }

  static Socket connect(int port, String target, int expected) throws IOException {
    Socket s = new Socket();
    s.setTcpNoDelay(true);
    s.setSoTimeout(15_000);
    s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
    OutputStream out = s.getOutputStream();
    out.write(("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n").getBytes());
    out.flush();
    InputStream in = s.getInputStream();
    // read the head byte by byte up to CRLFCRLF
    StringBuilder head = new StringBuilder();
    int state = 0;
    while (state < 4) {
      int c = in.read();
      if (c < 0) throw new IOException("eof in head: " + head);
      head.append((char) c);
      state = (c == '\r' && (state == 0 || state == 2)) || (c == '\n' && (state == 1 || state == 3)) ? state + 1 : (c == '\r' ? 1 : 0);
    }
    int status = Integer.parseInt(head.substring(9, 12));
    if (status != expected) throw new IOException("status " + status + " for " + target);
    return s;
  }

  static long[] setup(int port, String target, int warm, int count, int expected) throws IOException {
    long[] out = new long[count];
    for (int i = -warm; i < count; i++) {
      long b = System.nanoTime();
      Socket s = connect(port, target, expected);
      long e = System.nanoTime();
      s.close();
      if (i >= 0) out[i] = e - b;
    }
    return out;
  }

  static double rss(long pid) throws IOException {
    for (String l : Files.readAllLines(Path.of("/proc/" + pid + "/status")))
      if (l.startsWith("VmRSS:")) return Long.parseLong(l.replaceAll("[^0-9]", "")) / 1024.0;
    return -1;
  }

  static long ticks(long pid) throws IOException {
    String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return Long.parseLong(f[11]) + Long.parseLong(f[12]);
  }

  static double[] throughput(int port, String target, int seconds, long pid) throws IOException {
    try (Socket s = connect(port, target, 200)) {
      InputStream in = s.getInputStream();
      byte[] buf = new byte[64 * 1024];
      // warm up 1 s
      long w = System.nanoTime() + 1_000_000_000L;
      while (System.nanoTime() < w) in.read(buf);
      long t0 = ticks(pid);
      long begin = System.nanoTime();
      long end = begin + seconds * 1_000_000_000L;
      long bytes = 0;
      while (System.nanoTime() < end) {
        int n = in.read(buf);
        if (n < 0) throw new IOException("eof");
        bytes += n;
      }
      long el = System.nanoTime() - begin;
      long t1 = ticks(pid);
      double mbs = bytes / 1e6 / (el / 1e9);
      double cpuPerGb = (t1 - t0) / 100.0 / (bytes / 1e9);
      return new double[] {mbs, cpuPerGb};
    }
  }
}
