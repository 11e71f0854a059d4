package dev.agentsandbox.server.run;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.model.Network;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.ReapReport;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxBackend;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.SandboxPlan;
import dev.agentsandbox.backend.docker.DockerBackend;
import dev.agentsandbox.backend.docker.DockerBackendConfig;
import dev.agentsandbox.backend.docker.DockerClients;
import dev.agentsandbox.backend.docker.SubnetPool;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.policy.net.Cidr;
import dev.agentsandbox.runs.OperatorEgress;
import dev.agentsandbox.runs.RunSettings;
import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.server.RunWiring;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.testing.DockerObjects;
import dev.agentsandbox.testing.LinkServer;
import dev.agentsandbox.testing.api.ContractCheckedHttpClient;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The control plane under load, end to end: a real server on loopback, a real SQLite store, the
 * real Docker backend with its subnets from an operator's pool, the real proxy and workload images.
 *
 * <ol>
 *   <li>{@code asb.load.runs} runs at once through the run API, half under runsc and half under
 *       runc, each fetching from an allowed upstream through its own proxy: every one exits 0 with
 *       the upstream's body; afterwards nothing labelled remains on the daemon, the host has no
 *       more links than before, the JVM's threads and descriptors are back near the baseline, and
 *       the audit chain verifies.
 *   <li>{@code asb.load.clients} concurrent API clients for {@code asb.load.seconds}: reads,
 *       versioned configuration updates (racing each other: 409s expected) and plans; no 5xx, no
 *       connection error; p50 and p99 printed.
 *   <li>A soak of {@code asb.soak.runs} sequential runs: the JVM's RSS, heap after GC, threads and
 *       descriptors sampled every {@code asb.soak.every} runs and printed; descriptors asserted
 *       flat within a bound, nothing asserted about time.
 * </ol>
 *
 * <p>The control plane runs in this JVM, so "the control plane's" threads and descriptors are this
 * process's ({@code /proc/self}). A run's runtime is chosen by its agent: {@code load-runsc} runs
 * on a {@link DockerBackend} that uses runsc, {@code load-runc} on one whose gVisor runtime name
 * the daemon lacks (as {@code serve --docker-gvisor-runtime} would pin runc); {@link MixedRuntimes}
 * routes between the two real backends by that name. Each takes its subnets from a pool of its own.
 *
 * <p>Full form (issue 13): {@code -Dasb.load.runs=40 -Dasb.load.clients=200 -Dasb.load.seconds=60
 * -Dasb.soak.runs=500 -Dasb.it.maxConnections=1000} (the last lifts the IT JVM's connection cap to
 * the production default); the defaults are the bounded CI form.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class LoadIT {
  // The bounded CI form: the 40 runs at once (about 70 s on the shared 2-core VM); 150
  // clients for 15 s, since this module's IT JVM caps the server at 200 connections for
  // HostileInputIT (server/pom.xml, -Dasb.it.maxConnections); 20 soak runs instead of 500.
  private static final int RUNS = Integer.getInteger("asb.load.runs", 40);
  private static final int CLIENTS = Integer.getInteger("asb.load.clients", 150);
  private static final int SECONDS = Integer.getInteger("asb.load.seconds", 15);
  private static final int SOAK = Integer.getInteger("asb.soak.runs", 20);
  private static final int SOAK_EVERY =
      Integer.getInteger("asb.soak.every", Math.max(1, SOAK / 10));

  /**
   * With {@code -Dasb.soak.memory=true} each soak sample also prints where the RSS is ({@link
   * MemoryBreakdown}); run the IT JVM with {@code
   * -Dasb.it.jvmArgs=-XX:NativeMemoryTracking=summary} to add NMT's categories, a baseline after
   * the first run and its diff at the end, and the last {@code System.map} (both written to {@code
   * target/soak-memory/}).
   */
  private static final boolean SOAK_MEMORY = Boolean.getBoolean("asb.soak.memory");

  /**
   * Descriptors other than sockets (files, pipes, event and timer descriptors) may differ from the
   * baseline by this many: the JIT, the GC and class loading open a few on their own.
   */
  private static final int OTHER_FD_SLACK = 16;

  /**
   * Sockets may exceed the baseline by this many: docker-java's connection pool keeps idle
   * connections to the daemon for reuse (up to 256, {@code DockerClients}). A run holds at most
   * five calls at once, each on its own connection (the wait, the workload's and the proxy's log
   * follows, and a create, inspect or copy), so runs at once can leave up to five idle connections
   * each (measured: 172 above the baseline after 40). A leak grows with the number of runs, which
   * the soak's sequential runs show.
   */
  private static int socketSlack() {
    return 5 * Math.max(RUNS, 1) + 16;
  }

  /** Platform threads may exceed the baseline by this many (GC, JIT and carrier threads). */
  private static final int THREAD_SLACK = 16;

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String BASE = "/api/admin/platform/agent-sandbox";
  private static final String IMAGE = "agent-sandbox/workload:dev";
  private static final String UPSTREAM_ADDRESS = "198.18.79.5";
  private static final String BODY = "hello from the load upstream";
  private static final String RUNSC_POOL = "10.216.0.0/20";
  private static final String RUNC_POOL = "10.216.16.0/20";

  /** Unique per JVM: an earlier run's leftovers (a crashed JVM's) never count as this one's. */
  private static final String TAG = Long.toString(System.nanoTime(), 36);

  private static final String RUNSC_AGENT = "load-runsc-" + TAG;
  private static final String RUNC_AGENT = "load-runc-" + TAG;

  private static LinkServer upstream;
  private static Path dataDir;
  private static Store store;
  private static AgentSandboxServer server;
  private static DockerClient docker;
  private static String admin;
  private static HttpClient http;

  @BeforeAll
  static void start() throws Exception {
    docker = DockerClients.fromEnvironment();
    DockerBackendConfig base = DockerBackendConfig.defaults();
    Probe probe = new DockerBackend(docker, base).probe();
    if (!probe.available() || probe.isolation() != Isolation.GVISOR) {
      fail(
          "LoadIT needs a Docker daemon with runsc registered: "
              + probe.detail()
              + " (scripts/install-host.sh)");
    }
    for (String image : List.of(IMAGE, DockerBackendConfig.DEFAULT_PROXY_IMAGE)) {
      try {
        docker.inspectImageCmd(image).exec();
      } catch (RuntimeException e) {
        fail("LoadIT needs image " + image + " (run images/build.sh)");
      }
    }
    upstream = LinkServer.onLink("asb-load0", UPSTREAM_ADDRESS, BODY);
    dataDir = Files.createTempDirectory("asb-load-it");
    store = Store.open("jdbc:sqlite:" + dataDir.resolve("it.db"));
    DockerBackend runsc =
        new DockerBackend(
            docker, base.toBuilder().subnetPool(SubnetPool.parse(RUNSC_POOL)).build());
    DockerBackend runc =
        new DockerBackend(
            docker,
            base.toBuilder()
                .gvisorRuntime("no-such-runtime")
                .subnetPool(SubnetPool.parse(RUNC_POOL))
                .build());
    server =
        AgentSandboxServer.start(
            new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
            store,
            new RunWiring(
                List.of(new MixedRuntimes(runsc, runc)),
                new OperatorEgress(Map.of("upstream.test", List.of(UPSTREAM_ADDRESS))),
                new RunSettings("loadit" + TAG, 64 * 1024, 1000, RUNS + 8, 256),
                RunWiring.every(Duration.ofHours(1))));
    admin = store.tokens().create("it-admin", Scopes.ALL, null).secret();
    http = http11();
    HttpResponse<String> put = send(http, "PUT", BASE, config(300, "LoadIT"), "If-Match", "\"0\"");
    assertThat(put.statusCode()).as(put.body()).isEqualTo(200);
  }

  @AfterAll
  static void stop() throws Exception {
    if (http != null) {
      http.close();
    }
    if (server != null) {
      server.close();
    }
    if (store != null) {
      store.close();
    }
    if (upstream != null) {
      upstream.close();
    }
  }

  private static String config(int ttl, String reason) {
    String agent =
        """
        {"allow": ["upstream.test:%d"], "image": "%s", "ttl_seconds": %d,
         "resources": {"cpus": 0.5, "memory_mb": 128, "pids": 128},
         "internal": {"upstream": {"cidr": "%s/32", "ports": [%d]}}}
        """
            .formatted(upstream.port(), IMAGE, ttl, UPSTREAM_ADDRESS, upstream.port());
    return """
        {"enabled": true, "backend": "docker", "reason": "%s",
         "agents": {"%s": %s, "%s": %s}}
        """
        .formatted(reason, RUNSC_AGENT, agent, RUNC_AGENT, agent);
  }

  @Test
  @Order(1)
  void concurrentRunsUnderBothRuntimesAllSucceedAndLeaveNothingBehind() throws Exception {
    // One run under each runtime first, so that the baseline holds what any run loads once
    // (classes, the Docker client's first connections).
    for (String agent : List.of(RUNSC_AGENT, RUNC_AGENT)) {
      JsonNode warm = run(http, agent, "warm");
      assertThat(warm.path("exit_status").asInt()).as(warm.toString()).isZero();
    }
    awaitNothingLabelled();
    Usage before = Usage.settled();
    int linksBefore = hostLinks();
    System.out.printf(
        "LoadIT runs: baseline %s, host links %d, load average %s%n",
        before, linksBefore, loadAverage());

    NetworkWatch watch = new NetworkWatch();
    Thread watcher = Thread.ofPlatform().daemon().name("loadit-network-watch").start(watch);
    List<JsonNode> results = new CopyOnWriteArrayList<>();
    List<String> errors = new CopyOnWriteArrayList<>();
    List<Long> millis = new CopyOnWriteArrayList<>();
    long started = System.nanoTime();
    try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
      List<Future<?>> done = new ArrayList<>();
      for (int i = 0; i < RUNS; i++) {
        int n = i;
        done.add(
            pool.submit(
                () -> {
                  long t0 = System.nanoTime();
                  try {
                    results.add(run(http, n % 2 == 0 ? RUNSC_AGENT : RUNC_AGENT, "run-" + n));
                  } catch (Exception e) {
                    errors.add("run " + n + ": " + e);
                  }
                  millis.add((System.nanoTime() - t0) / 1_000_000);
                }));
      }
      for (Future<?> f : done) {
        f.get(20, TimeUnit.MINUTES);
      }
    } finally {
      watch.stop();
      watcher.join(10_000);
    }
    long wall = (System.nanoTime() - started) / 1_000_000;
    System.out.printf(
        "LoadIT runs: %d at once in %d ms (per run p50 %d ms, max %d ms), at most %d of their"
            + " networks live at once, load average %s%n",
        RUNS,
        wall,
        percentile(millis, 50),
        percentile(millis, 100),
        watch.maxLive.get(),
        loadAverage());

    assertThat(errors).as("runs that got no answer").isEmpty();
    assertThat(results).hasSize(RUNS);
    Map<String, Integer> runtimes = new TreeMap<>();
    for (JsonNode result : results) {
      assertThat(result.path("end").asText()).as(result.toString()).isEqualTo("exit");
      assertThat(result.path("exit_status").asInt()).as(result.toString()).isZero();
      String tail = result.path("output_tail").asText();
      assertThat(tail)
          .as(result.toString())
          .contains(BODY)
          .contains("done " + result.path("run_id").asText());
      runtimes.merge(result.path("runtime").asText("?"), 1, Integer::sum);
    }
    System.out.println("LoadIT runs: by runtime " + runtimes);
    assertThat(runtimes)
        .as("half under each runtime")
        .containsEntry("runsc", (RUNS + 1) / 2)
        .containsEntry("runc", RUNS / 2);
    assertThat(watch.outside).as("networks with a subnet outside the pools").isEmpty();
    assertThat(watch.maxLive.get())
        .as("networks seen live at once")
        .isGreaterThanOrEqualTo(Math.min(RUNS, 2));

    awaitNothingLabelled();
    // Bridges and veths go with their networks and containers, which are removed after each run
    // is answered; allow the host the same bounded moment to let go of them.
    await()
        .atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(500))
        .untilAsserted(
            () ->
                assertThat(hostLinks())
                    .as("host links (veths, bridges) after the runs")
                    .isLessThanOrEqualTo(linksBefore));
    Usage after = Usage.settledWithin(before);
    System.out.printf("LoadIT runs: after %s%n", after);
    after.assertWithin(before);
    assertAuditVerifies();
  }

  @Test
  @Order(2)
  void concurrentApiClientsGetNoServerErrorAndNoConnectionError() throws Exception {
    // The JDK server closes every connection past its cap at once; the clients must fit under it,
    // beside the connections an earlier phase left open (closed here).
    int cap = Integer.getInteger("jdk.httpserver.maxConnections", 1000);
    assertThat(CLIENTS)
        .as("clients vs this JVM's jdk.httpserver.maxConnections (raise -Dasb.it.maxConnections)")
        .isLessThanOrEqualTo(cap - 2);
    http.close();
    http = http11();
    Thread.sleep(1000);
    Map<String, List<Long>> latencies = new ConcurrentHashMap<>();
    Map<Integer, AtomicInteger> statuses = new ConcurrentHashMap<>();
    List<String> failures = new CopyOnWriteArrayList<>();
    Instant until = Instant.now().plusSeconds(SECONDS);
    System.out.printf(
        "LoadIT api: %d clients for %d s, load average %s%n", CLIENTS, SECONDS, loadAverage());
    try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
      List<Future<?>> done = new ArrayList<>();
      for (int c = 0; c < CLIENTS; c++) {
        int client = c;
        done.add(
            pool.submit(
                () -> {
                  // Each client its own connection, as separate callers would have.
                  try (HttpClient own = http11()) {
                    for (int i = 0; Instant.now().isBefore(until) && i < 100_000; i++) {
                      apiCall(own, client, i, latencies, statuses, failures);
                    }
                  }
                  return null;
                }));
      }
      for (Future<?> f : done) {
        f.get(SECONDS + 300L, TimeUnit.SECONDS);
      }
    }
    List<Long> all = new ArrayList<>();
    latencies.values().forEach(all::addAll);
    Map<String, String> perKind = new TreeMap<>();
    latencies.forEach(
        (kind, list) ->
            perKind.put(
                kind,
                list.size()
                    + " calls, p50 "
                    + percentile(list, 50) / 1000.0
                    + " ms, p99 "
                    + percentile(list, 99) / 1000.0
                    + " ms"));
    Map<Integer, Integer> counts = new TreeMap<>();
    statuses.forEach((k, v) -> counts.put(k, v.get()));
    System.out.printf(
        "LoadIT api: %d calls, statuses %s, p50 %.1f ms, p99 %.1f ms, max %.1f ms; %s; load"
            + " average %s%n",
        all.size(),
        counts,
        percentile(all, 50) / 1000.0,
        percentile(all, 99) / 1000.0,
        percentile(all, 100) / 1000.0,
        perKind,
        loadAverage());
    assertThat(failures).as("5xx answers, unexpected statuses and connection errors").isEmpty();
    assertThat(counts.keySet()).as("only 200 and, for racing updates, 409").isSubsetOf(200, 409);
    assertThat(counts).as("some updates won").containsKey(200);
    assertThat(latencies.getOrDefault("update", List.of())).isNotEmpty();
    assertAuditVerifies();
  }

  private static void apiCall(
      HttpClient own,
      int client,
      int i,
      Map<String, List<Long>> latencies,
      Map<Integer, AtomicInteger> statuses,
      List<String> failures) {
    int kind = (client + i) % 10;
    String label = kind < 5 ? "read" : kind < 8 ? "plan" : "update";
    long t0 = System.nanoTime();
    try {
      HttpResponse<String> response;
      if (kind < 5) {
        String path =
            switch (kind) {
              case 0 -> BASE;
              case 1 -> BASE + "/runs?limit=20";
              case 2 -> "/api/admin/platform/audit?limit=20";
              case 3 -> "/healthz";
              default -> "/api/admin/platform/egress-policy";
            };
        response = send(own, "GET", path, null);
        // A missing instance policy answers 404 on some stores; any other 4xx is the test's.
        if (kind == 4 && response.statusCode() == 404) {
          response = send(own, "GET", BASE, null);
        }
      } else if (kind < 8) {
        response =
            send(
                own,
                "POST",
                BASE + "/plan",
                "{\"agent\": \""
                    + (kind % 2 == 0 ? RUNSC_AGENT : RUNC_AGENT)
                    + "\", \"command\": [\"true\"]}");
      } else {
        HttpResponse<String> current = send(own, "GET", BASE, null);
        count(statuses, current.statusCode());
        if (current.statusCode() != 200) {
          failures.add("GET before update: " + current.statusCode() + " " + current.body());
          return;
        }
        String etag = current.headers().firstValue("ETag").orElse("");
        t0 = System.nanoTime();
        int ttl = 300 + ThreadLocalRandom.current().nextInt(60);
        response = send(own, "PUT", BASE, config(ttl, "LoadIT client " + client), "If-Match", etag);
      }
      long micros = (System.nanoTime() - t0) / 1000;
      latencies.computeIfAbsent(label, k -> new CopyOnWriteArrayList<>()).add(micros);
      int status = response.statusCode();
      count(statuses, status);
      boolean expected = status == 200 || (label.equals("update") && status == 409);
      if (!expected) {
        failures.add(label + ": " + status + " " + abbreviate(response.body()));
      }
    } catch (AssertionError e) {
      failures.add(label + ": against openapi.json: " + abbreviate(String.valueOf(e.getMessage())));
    } catch (IOException e) {
      failures.add(label + ": connection error: " + e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      failures.add("interrupted");
    }
  }

  @Test
  @Order(3)
  void aSoakOfSequentialRunsKeepsDescriptorsFlat() throws Exception {
    awaitNothingLabelled();
    List<String> series = new ArrayList<>();
    Usage first = null;
    Usage last = null;
    long started = System.nanoTime();
    for (int i = 0; i < SOAK; i++) {
      String agent = i % 2 == 0 ? RUNSC_AGENT : RUNC_AGENT;
      JsonNode result = run(http, agent, "soak-" + i);
      assertThat(result.path("exit_status").asInt()).as("soak run " + i + ": " + result).isZero();
      assertThat(result.path("output_tail").asText()).contains(BODY);
      if (i == 0 || (i + 1) % SOAK_EVERY == 0 || i == SOAK - 1) {
        Usage now = Usage.settled();
        if (first == null) {
          first = now;
        }
        last = now;
        series.add("after run " + (i + 1) + ": " + now + ", load " + loadAverage());
        if (SOAK_MEMORY) {
          if (i == 0) {
            MemoryBreakdown.nmt("baseline");
          }
          series.add("after run " + (i + 1) + ": memory " + MemoryBreakdown.sample());
        }
      }
    }
    if (SOAK_MEMORY) {
      Path out = Path.of("target", "soak-memory");
      Files.createDirectories(out);
      Files.writeString(out.resolve("nmt-summary-diff.txt"), MemoryBreakdown.nmt("summary.diff"));
      Files.writeString(out.resolve("system-map.txt"), MemoryBreakdown.systemMapText());
      // Last, since it changes what it measures: how much of the arenas' RSS was free memory.
      System.out.println("LoadIT soak: " + MemoryBreakdown.trimNativeHeap());
      System.out.println("LoadIT soak: after the trim: memory " + MemoryBreakdown.sample());
      System.out.println("LoadIT soak: NMT diff and System.map in " + out.toAbsolutePath());
    }
    long seconds = (System.nanoTime() - started) / 1_000_000_000;
    System.out.println("LoadIT soak: " + SOAK + " sequential runs in " + seconds + " s");
    series.forEach(s -> System.out.println("LoadIT soak: " + s));
    awaitNothingLabelled();
    if (first != null && SOAK > 1) {
      // One run at a time: a leak of one descriptor per run shows as SOAK of them.
      assertThat(last.sockets)
          .as("sockets after the soak vs after its first run")
          .isLessThanOrEqualTo(first.sockets + 16);
      assertThat(last.otherFds)
          .as("other descriptors after the soak vs after its first run")
          .isLessThanOrEqualTo(first.otherFds + OTHER_FD_SLACK);
      assertThat(last.threads).isLessThanOrEqualTo(first.threads + THREAD_SLACK);
    }
    assertAuditVerifies();
  }

  private static JsonNode run(HttpClient client, String agent, String tag) throws Exception {
    String script =
        "curl -sS -m 60 http://upstream.test:"
            + upstream.port()
            + "/ && echo && echo done $AGENT_SANDBOX_RUN_ID "
            + tag;
    HttpResponse<String> response =
        send(
            client,
            "POST",
            BASE + "/run",
            JSON.writeValueAsString(
                Map.of("agent", agent, "command", List.of("sh", "-c", script))));
    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    return JSON.readTree(response.body());
  }

  private static void assertAuditVerifies() throws Exception {
    HttpResponse<String> verify = send(http, "GET", "/api/admin/platform/audit/verify", null);
    assertThat(verify.statusCode()).as(verify.body()).isEqualTo(200);
    JsonNode body = JSON.readTree(verify.body());
    assertThat(body.path("ok").asBoolean()).as(verify.body()).isTrue();
    assertThat(body.path("problems").size()).isZero();
    System.out.println("LoadIT audit: chain verifies, " + body.path("rows_checked") + " rows");
  }

  private static void count(Map<Integer, AtomicInteger> statuses, int status) {
    statuses.computeIfAbsent(status, k -> new AtomicInteger()).incrementAndGet();
  }

  private static String abbreviate(String text) {
    return text.length() > 300 ? text.substring(0, 300) + "..." : text;
  }

  private static HttpResponse<String> send(
      HttpClient client, String method, String path, String body, String... headers)
      throws IOException, InterruptedException {
    HttpRequest.Builder builder =
        HttpRequest.newBuilder(URI.create(server.baseUrl() + path))
            .timeout(Duration.ofMinutes(10))
            .header("Authorization", "Bearer " + admin);
    for (int i = 0; i < headers.length; i += 2) {
      builder.header(headers[i], headers[i + 1]);
    }
    if (body == null) {
      builder.method(method, HttpRequest.BodyPublishers.noBody());
    } else {
      builder
          .header("Content-Type", "application/json")
          .method(method, HttpRequest.BodyPublishers.ofString(body));
    }
    return client.send(builder.build(), HttpResponse.BodyHandlers.ofString());
  }

  /**
   * A client of its own on HTTP/1.1 whose every exchange is checked against openapi.json; the
   * latencies this test prints include that check.
   */
  private static HttpClient http11() {
    return ContractCheckedHttpClient.wrapping(
        HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build());
  }

  private static long percentile(List<Long> values, int p) {
    if (values.isEmpty()) {
      return 0;
    }
    List<Long> sorted = new ArrayList<>(values);
    Collections.sort(sorted);
    int index = (int) Math.ceil(p / 100.0 * sorted.size()) - 1;
    return sorted.get(Math.max(0, Math.min(sorted.size() - 1, index)));
  }

  private static String loadAverage() {
    try {
      String[] parts = Files.readString(Path.of("/proc/loadavg")).split(" ");
      return parts[0] + " " + parts[1] + " " + parts[2];
    } catch (IOException e) {
      return "?";
    }
  }

  /** Links on the host: each run's bridges and veths are links while it lives. */
  private static int hostLinks() throws IOException {
    try (var links = Files.list(Path.of("/sys/class/net"))) {
      return (int) links.count();
    }
  }

  private static boolean ours(Map<String, String> labels) {
    String agent = labels == null ? null : labels.get(Labels.AGENT);
    return RUNSC_AGENT.equals(agent) || RUNC_AGENT.equals(agent);
  }

  /** Containers, networks and volumes of this class's runs. */
  private static List<String> labelled() {
    return DockerObjects.managed(docker, LoadIT::ours);
  }

  private static void awaitNothingLabelled() {
    // A run is answered before its sandbox is removed (docs/runs.md, "Teardown"): wait, bounded,
    // for the removals still going.
    await()
        .atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(500))
        .untilAsserted(
            () -> assertThat(labelled()).as("labelled objects of this class's runs").isEmpty());
  }

  /** Watches this class's networks while runs live: how many at once, and their subnets. */
  private static final class NetworkWatch implements Runnable {
    final AtomicInteger maxLive = new AtomicInteger();
    final Set<String> outside = ConcurrentHashMap.newKeySet();
    private volatile boolean stopped;

    void stop() {
      stopped = true;
    }

    @Override
    public void run() {
      List<Cidr> pools = List.of(Cidr.parse(RUNSC_POOL), Cidr.parse(RUNC_POOL));
      // Bounded: at most an hour of samples, twice a second.
      for (int i = 0; i < 7200 && !stopped; i++) {
        try {
          List<Network> live =
              docker
                  .listNetworksCmd()
                  .withFilter("label", List.of(Labels.MANAGED_BY + "=" + Labels.MANAGER))
                  .exec()
                  .stream()
                  .filter(n -> ours(n.getLabels()))
                  .toList();
          maxLive.accumulateAndGet(live.size(), Math::max);
          for (Network n : live) {
            List<Network.Ipam.Config> configs =
                n.getIpam() == null || n.getIpam().getConfig() == null
                    ? List.of()
                    : n.getIpam().getConfig();
            Predicate<String> inPool = s -> pools.stream().anyMatch(p -> p.covers(Cidr.parse(s)));
            if (configs.isEmpty()) {
              outside.add(n.getName() + " (no subnet)");
            }
            for (Network.Ipam.Config c : configs) {
              if (c.getSubnet() == null || !inPool.test(c.getSubnet())) {
                outside.add(n.getName() + " " + c.getSubnet());
              }
            }
          }
          Thread.sleep(500);
        } catch (InterruptedException e) {
          return;
        } catch (RuntimeException e) {
          // A network removed between list and read; the next sample sees the rest.
        }
      }
    }
  }

  /** This process's threads, descriptors and memory. */
  record Usage(int threads, int sockets, int otherFds, long rssKib, long heapMib) {
    static Usage now() throws IOException {
      int sockets = 0;
      int other = 0;
      try (var fds = Files.list(Path.of("/proc/self/fd"))) {
        for (Path fd : fds.toList()) {
          try {
            if (Files.readSymbolicLink(fd).toString().startsWith("socket:")) {
              sockets++;
            } else {
              other++;
            }
          } catch (IOException e) {
            // Closed between list and read (the listing's own descriptor among them).
          }
        }
      }
      int threads = 0;
      long rss = 0;
      for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
        if (line.startsWith("Threads:")) {
          threads = Integer.parseInt(line.substring(8).strip());
        } else if (line.startsWith("VmRSS:")) {
          rss = Long.parseLong(line.substring(6).strip().split("\\s+")[0]);
        }
      }
      Runtime rt = Runtime.getRuntime();
      long heap = (rt.totalMemory() - rt.freeMemory()) / (1024 * 1024);
      return new Usage(threads, sockets, other, rss, heap);
    }

    /** After a GC and a short pause, so that finished threads and dropped streams are gone. */
    static Usage settled() throws Exception {
      System.gc();
      Thread.sleep(1000);
      return now();
    }

    /**
     * Waits (bounded, 60 s) until usage is back within the slack of {@code baseline}: threads and
     * connections a run used end a moment after its answer.
     */
    static Usage settledWithin(Usage baseline) throws Exception {
      Usage now = settled();
      for (int i = 0; i < 30 && !now.within(baseline); i++) {
        Thread.sleep(2000);
        now = settled();
      }
      return now;
    }

    boolean within(Usage baseline) {
      return threads <= baseline.threads + THREAD_SLACK
          && sockets <= baseline.sockets + socketSlack()
          && otherFds <= baseline.otherFds + OTHER_FD_SLACK;
    }

    void assertWithin(Usage baseline) {
      assertThat(threads)
          .as("platform threads after vs before (" + baseline + ")")
          .isLessThanOrEqualTo(baseline.threads + THREAD_SLACK);
      assertThat(sockets)
          .as("sockets after vs before (" + baseline + ")")
          .isLessThanOrEqualTo(baseline.sockets + socketSlack());
      assertThat(otherFds)
          .as("other descriptors after vs before (" + baseline + ")")
          .isLessThanOrEqualTo(baseline.otherFds + OTHER_FD_SLACK);
    }

    @Override
    public String toString() {
      return "threads "
          + threads
          + ", fds "
          + (sockets + otherFds)
          + " ("
          + sockets
          + " sockets), RSS "
          + rssKib / 1024
          + " MiB, heap "
          + heapMib
          + " MiB";
    }
  }

  /**
   * Two real Docker backends behind one name, a run going to the one its agent names: the only way
   * to mix runtimes in one control plane, which picks the strongest runtime it has.
   */
  private record MixedRuntimes(DockerBackend runsc, DockerBackend runc) implements SandboxBackend {
    private DockerBackend pick(RunSpec spec) {
      return spec.agent().equals(RUNC_AGENT) ? runc : runsc;
    }

    @Override
    public String name() {
      return DockerBackend.NAME;
    }

    @Override
    public boolean deliversCredentials() {
      return true;
    }

    @Override
    public Probe probe() {
      return runsc.probe();
    }

    @Override
    public SandboxPlan plan(RunSpec spec) {
      return pick(spec).plan(spec);
    }

    @Override
    public Sandbox launch(RunSpec spec, SandboxListener listener) {
      return pick(spec).launch(spec, listener);
    }

    @Override
    public ReapReport reap(Instant now, Predicate<String> isLive) {
      // Both reap by the same labels; one pass covers both.
      return runsc.reap(now, isLive);
    }
  }
}
