package dev.agentsandbox.bench;

import dev.agentsandbox.bench.ProxyLauncher.RunningProxy;
import dev.agentsandbox.bench.Report.Metric;
import dev.agentsandbox.bench.Workloads.IdleStage;
import dev.agentsandbox.bench.Workloads.Throughput;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Runs our egress proxy, squid and tinyproxy one after another against the same loopback upstream
 * and allow-list, plus a direct connection as the baseline, and prints a side-by-side table.
 *
 * <p>Started by {@code bench/proxy-bench.sh}, which prepares the machine; see docs/benchmarks.md.
 */
public final class ProxyBench {
  private final BenchOptions options;
  private final ProxyLauncher launcher;
  private final Report report = new Report();
  private final Map<Integer, Double> directThroughput = new HashMap<>();
  private final Set<RunningProxy> running = ConcurrentHashMap.newKeySet();
  private boolean failed;

  private ProxyBench(BenchOptions options, ProxyLauncher launcher) {
    this.options = options;
    this.launcher = launcher;
  }

  public static void main(String[] args) throws Exception {
    BenchOptions options;
    try {
      options = BenchOptions.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("agent-sandbox-bench: " + e.getMessage());
      System.exit(2);
      return;
    }
    Files.createDirectories(options.workDir());
    ProxyLauncher launcher =
        new ProxyLauncher(
            new ProxyLauncher.Setup(
                options.workDir(),
                options.proxyJar(),
                options.proxyJava(),
                options.proxyJavaOptions(),
                options.squid(),
                options.tinyproxy(),
                options.workDir().resolve("pids")));
    ProxyBench bench = new ProxyBench(options, launcher);
    // The script's trap also kills what the pid file lists, for when this JVM is killed hard.
    Runtime.getRuntime().addShutdownHook(new Thread(bench::stopAll));
    bench.run();
    boolean allPassed = !bench.failed;
    String table = bench.report.markdown(options.idleStages()[0], options.idleStages()[1]);
    System.out.print(table);
    if (options.out().isPresent()) {
      Files.writeString(options.out().get(), table, StandardCharsets.UTF_8);
    }
    System.exit(allPassed ? 0 : 1);
  }

  private void run() throws InterruptedException {
    for (String selected : options.targets()) {
      String target = selected.equals("agent-sandbox") ? options.proxyLabel() : selected;
      report.target(target);
      System.err.println("== " + target);
      try (Upstream upstream =
          new Upstream(InetAddress.getByName(ComparedProxySetups.UPSTREAM_ADDRESS))) {
        if (selected.equals("direct")) {
          measure(route(target, Optional.empty(), upstream), upstream, OptionalLong.empty());
        } else {
          measureProxy(ProxyKind.fromLabel(selected), target, upstream);
        }
      } catch (IOException | RuntimeException e) {
        failed = true;
        report.note(target + " failed: " + e.getMessage());
      }
    }
  }

  private void measureProxy(ProxyKind kind, String label, Upstream upstream)
      throws IOException, InterruptedException {
    long[] startNanos = new long[options.startTrials()];
    for (int i = 0; i < startNanos.length; i++) {
      RunningProxy trial = launch(kind, upstream);
      startNanos[i] = trial.startToReadyNanos();
      stop(trial);
    }
    LatencySummary start = LatencySummary.of(startNanos);
    report.put(
        label,
        Metric.START_TO_READY,
        Report.fixed(start.p50Nanos() / 1e6, 0) + " / " + Report.fixed(start.maxNanos() / 1e6, 0));
    RunningProxy proxy = launch(kind, upstream);
    try {
      Thread.sleep(options.settle());
      report.put(label, Metric.IDLE_RSS, Report.mib(ProcStats.rssKib(proxy.pid())));
      measure(
          route(label, Optional.of(proxy.address()), upstream),
          upstream,
          OptionalLong.of(proxy.pid()));
      Thread.sleep(options.settle());
      report.put(label, Metric.RSS_AFTER, Report.mib(ProcStats.rssKib(proxy.pid())));
    } finally {
      stop(proxy);
    }
  }

  /** One measurement; a failing one is reported and the others still run. */
  private interface Step {
    void run() throws IOException, InterruptedException;
  }

  private void step(String target, String what, Step step) throws InterruptedException {
    try {
      step.run();
    } catch (IOException | RuntimeException e) {
      failed = true;
      report.note(target + ": " + what + " failed: " + e.getMessage());
    }
  }

  private void measure(Route route, Upstream upstream, OptionalLong proxyPid)
      throws InterruptedException {
    String target = route.label();
    step(
        target,
        "CONNECT set-up (allowed)",
        () -> {
          LatencySummary allowed =
              LatencySummary.of(
                  Workloads.setupLatencies(
                      route,
                      route.allowedHost(),
                      200,
                      options.setupWarmup(),
                      options.setupCount()));
          report.put(
              target,
              Metric.SETUP_ALLOWED,
              Report.micros(allowed.p50Nanos()) + " / " + Report.micros(allowed.p99Nanos()));
        });
    if (!route.direct()) {
      step(
          target,
          "CONNECT set-up (refused)",
          () -> {
            LatencySummary refused =
                LatencySummary.of(
                    Workloads.setupLatencies(
                        route,
                        route.refusedHost(),
                        403,
                        options.setupWarmup(),
                        options.setupCount()));
            report.put(
                target,
                Metric.SETUP_REFUSED,
                Report.micros(refused.p50Nanos()) + " / " + Report.micros(refused.p99Nanos()));
          });
    }
    step(
        target,
        "tunnel throughput, 1 stream",
        () ->
            throughput(
                route,
                proxyPid,
                1,
                Metric.THROUGHPUT_1,
                Metric.THROUGHPUT_1_SHARE,
                Metric.CPU_PER_GB_1));
    step(
        target,
        "tunnel throughput, 16 streams",
        () ->
            throughput(
                route,
                proxyPid,
                16,
                Metric.THROUGHPUT_16,
                Metric.THROUGHPUT_16_SHARE,
                Metric.CPU_PER_GB_16));
    step(
        target,
        "plain HTTP",
        () -> {
          Workloads.httpRate(route, options.httpConnections(), options.settle()); // warm-up
          long upstreamBefore = upstream.accepted();
          Workloads.HttpRate rate =
              Workloads.httpRate(route, options.httpConnections(), options.httpWindow());
          report.put(
              target,
              Metric.HTTP_UPSTREAM_CONNECTIONS,
              Long.toString(upstream.accepted() - upstreamBefore));
          report.put(target, Metric.HTTP_RATE, Report.fixed(rate.requestsPerSecond(), 0));
          report.put(target, Metric.HTTP_CONNECTIONS, Long.toString(rate.connectionsOpened()));
        });
    if (proxyPid.isPresent()) {
      step(target, "idle tunnels", () -> idleTunnels(route, proxyPid.getAsLong()));
    }
  }

  private void throughput(
      Route route, OptionalLong proxyPid, int streams, Metric rate, Metric share, Metric cpu)
      throws IOException, InterruptedException {
    Workloads.throughput(route, streams, options.settle(), proxyPid); // warm-up
    int repeats = options.throughputRepeats();
    double[] megabytes = new double[repeats];
    double[] cpuPerGb = new double[repeats];
    for (int i = 0; i < repeats; i++) {
      Throughput run = Workloads.throughput(route, streams, options.throughputWindow(), proxyPid);
      megabytes[i] = run.megabytesPerSecond();
      if (run.proxyCpuTicks().isPresent()) {
        double seconds = run.proxyCpuTicks().getAsLong() / (double) options.clockTicksPerSecond();
        cpuPerGb[i] = seconds / (run.bytes() / 1e9);
      }
    }
    double median = LatencySummary.median(megabytes);
    report.put(route.label(), rate, Report.fixed(median, 0));
    if (route.direct()) {
      directThroughput.put(streams, median);
      return;
    }
    Double direct = directThroughput.get(streams);
    if (direct != null) {
      report.put(route.label(), share, Report.fixed(100.0 * median / direct, 0) + " %");
    }
    report.put(route.label(), cpu, Report.fixed(LatencySummary.median(cpuPerGb), 2));
  }

  private void idleTunnels(Route route, long pid) throws IOException, InterruptedException {
    long before = ProcStats.rssKib(pid);
    List<IdleStage> stages =
        Workloads.idleTunnels(route, pid, options.idleStages(), options.settle());
    IdleStage small = stages.get(0);
    IdleStage large = stages.get(1);
    report.put(route.label(), Metric.IDLE_SMALL, Report.mib(small.rssKib()));
    report.put(
        route.label(),
        Metric.IDLE_SMALL_PER_TUNNEL,
        Report.fixed((small.rssKib() - before) / (double) small.tunnels(), 1));
    report.put(route.label(), Metric.IDLE_LARGE, Report.mib(large.rssKib()));
    report.put(
        route.label(),
        Metric.IDLE_LARGE_PER_TUNNEL,
        Report.fixed((large.rssKib() - before) / (double) large.tunnels(), 1));
    report.put(
        route.label(),
        Metric.IDLE_ALIVE,
        (small.alive() + large.alive()) + " of " + (small.probed() + large.probed()));
  }

  private Route route(String label, Optional<InetSocketAddress> proxy, Upstream upstream) {
    return new Route(
        label,
        proxy,
        new InetSocketAddress(ComparedProxySetups.UPSTREAM_ADDRESS, upstream.port()),
        ComparedProxySetups.ALLOWED_HOST,
        ComparedProxySetups.REFUSED_HOST);
  }

  private RunningProxy launch(ProxyKind kind, Upstream upstream)
      throws IOException, InterruptedException {
    RunningProxy proxy = launcher.start(kind, upstream.port());
    running.add(proxy);
    return proxy;
  }

  private void stop(RunningProxy proxy) throws InterruptedException {
    proxy.stop();
    running.remove(proxy);
  }

  private void stopAll() {
    for (RunningProxy proxy : running) {
      proxy.process().destroyForcibly();
    }
  }
}
