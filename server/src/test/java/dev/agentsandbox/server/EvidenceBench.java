package dev.agentsandbox.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.store.AuditEvent;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.store.VerifyResult;
import dev.agentsandbox.testing.api.OpenApiContract;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Load harness (not a test): fills a store with audit rows through the store's own append path
 * (hash chain and egress index as in production), then times egress proposals and change impacts
 * over real HTTP. Numbers are for docs/benchmarks.md, never asserted.
 *
 * <p>Usage: {@code java -cp <server test classpath> dev.agentsandbox.server.EvidenceBench URL ROWS
 * REFUSALS [ROUNDS]}; {@code URL} an empty store ({@code jdbc:sqlite:/tmp/b.db} or a PostgreSQL URL
 * with an empty {@code currentSchema}). Seeded (seed 25), so both dialects get the same rows.
 */
final class EvidenceBench {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String CONFIG = "/api/admin/platform/agent-sandbox";
  private static final String PROPOSAL = CONFIG + "/agents/planner/egress-proposal?since=7d";
  private static final int BATCH = 5_000;
  private static final int RUNS = 10_000;
  private static final List<String> ALLOWED =
      List.of(
          "pypi.org",
          "files.pythonhosted.org",
          "github.com",
          "api.vendor.com",
          "objects.example.net");

  private EvidenceBench() {}

  /** A clock the generator moves row by row across the last six days. */
  static final class SteppingClock extends Clock {
    final AtomicLong millis = new AtomicLong();

    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      return this;
    }

    @Override
    public Instant instant() {
      return Instant.ofEpochMilli(millis.get());
    }
  }

  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    String url = args[0];
    long rows = Long.parseLong(args[1]);
    long refusals = Long.parseLong(args[2]);
    int rounds = args.length > 3 ? Integer.parseInt(args[3]) : 5;
    SteppingClock clock = new SteppingClock();
    Instant start = Instant.now().minus(Duration.ofDays(6));
    clock.millis.set(start.toEpochMilli());
    try (Store store = Store.open(url, clock)) {
      String admin =
          store.tokens().create("bench-admin-" + System.nanoTime(), Scopes.ALL, null).secret();
      if (store.audit().head().id() > 0) {
        // A store this harness filled before (the rows are seeded, so they are the same rows).
        out.printf("%s: reusing %d rows%n", store.dialect(), store.audit().head().id());
      } else {
        long began = System.nanoTime();
        long written = generate(store, clock, start, rows, refusals);
        double seconds = (System.nanoTime() - began) / 1e9;
        out.printf(
            "%s: %d rows (%d refusals of planner) appended in %.0f s (%.0f rows/s)%n",
            store.dialect(), written, refusals, seconds, written / seconds);
      }
      clock.millis.set(Instant.now().toEpochMilli());
      try (AgentSandboxServer server =
          AgentSandboxServer.start(
              new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), store)) {
        HttpClient http = HttpClient.newHttpClient();
        if (JSON.readTree(send(http, server, admin, "GET", CONFIG, null)).path("version").asLong()
            == 0) {
          configure(http, server, admin);
        }
        out.printf("load average before measuring: %s%n", loadAverage());
        JsonNode proposal = null;
        long[] proposals = new long[rounds];
        long[] proposalCpu = new long[rounds];
        for (int i = 0; i < rounds; i++) {
          long cpu = processCpuMillis();
          long t = System.nanoTime();
          HttpResponse<String> answer = exchange(http, server, admin, "GET", PROPOSAL, null);
          proposal = JSON.readTree(answer.body());
          proposals[i] = (System.nanoTime() - t) / 1_000_000;
          proposalCpu[i] = processCpuMillis() - cpu;
          checked(answer, null);
        }
        out.printf(
            "proposal: %s ms (median %d, max %d), CPU %s ms (median %d); %d refusals read, %d"
                + " entries, %d not fixable%n",
            Arrays.toString(proposals),
            median(proposals),
            max(proposals),
            Arrays.toString(proposalCpu),
            median(proposalCpu),
            proposal.path("refusals_read").asLong(),
            proposal.path("entries").size(),
            proposal.path("not_fixable").size());
        ObjectNode document =
            editable(JSON.readTree(send(http, server, admin, "GET", CONFIG, null)));
        ObjectNode planner = (ObjectNode) document.path("agents").path("planner");
        document.put("reason", "EvidenceBench");
        // The proposal applied, and one allowed host removed: a loosening and a tightening at once.
        List<String> allow = new ArrayList<>();
        proposal.path("allow_after").forEach(e -> allow.add(e.asText()));
        allow.remove("api.vendor.com");
        planner.set("allow", JSON.valueToTree(allow));
        JsonNode impact = null;
        long[] impacts = new long[rounds];
        long[] impactCpu = new long[rounds];
        for (int i = 0; i < rounds; i++) {
          long cpu = processCpuMillis();
          long t = System.nanoTime();
          String change = document.toString();
          HttpResponse<String> answer =
              exchange(http, server, admin, "PUT", CONFIG + "?dry_run=true", change);
          impact = JSON.readTree(answer.body());
          impacts[i] = (System.nanoTime() - t) / 1_000_000;
          impactCpu[i] = processCpuMillis() - cpu;
          checked(answer, change);
        }
        JsonNode agent = impact.path("change").path("impact").path("agents").get(0);
        out.printf(
            "impact (planner's change): %s ms (median %d, max %d), CPU %s ms (median %d); would"
                + " allow %d refusals in %d runs, would break %d runs%n",
            Arrays.toString(impacts),
            median(impacts),
            max(impacts),
            Arrays.toString(impactCpu),
            median(impactCpu),
            agent.path("would_allow").path("refusals").asLong(),
            agent.path("would_allow").path("runs").asInt(),
            agent.path("would_refuse").path("runs").asInt());
        String policy = "{\"default\": {\"allow\": [\"pypi.org\", \"github.com\"]}}";
        long[] policies = new long[rounds];
        long[] policyCpu = new long[rounds];
        JsonNode policyImpact = null;
        for (int i = 0; i < rounds; i++) {
          long cpu = processCpuMillis();
          long t = System.nanoTime();
          HttpResponse<String> answer =
              exchange(
                  http,
                  server,
                  admin,
                  "PUT",
                  "/api/admin/platform/egress-policy?dry_run=true",
                  policy);
          policyImpact = JSON.readTree(answer.body());
          policies[i] = (System.nanoTime() - t) / 1_000_000;
          policyCpu[i] = processCpuMillis() - cpu;
          checked(answer, policy);
        }
        out.printf(
            "impact (egress policy default rule, every agent): %s ms (median %d, max %d), CPU %s ms"
                + " (median %d); %d agents%n",
            Arrays.toString(policies),
            median(policies),
            max(policies),
            Arrays.toString(policyCpu),
            median(policyCpu),
            policyImpact.path("impact").path("agents").size()
                + policyImpact.path("change").path("impact").path("agents").size());
      }
      long t = System.nanoTime();
      VerifyResult verified = store.audit().verify();
      out.printf(
          "verify: ok=%s, %d rows in %.0f s%n",
          verified.ok(), verified.rowsChecked(), (System.nanoTime() - t) / 1e9);
    }
  }

  /**
   * The rows: planner's runs each refused at 20 hosts (mostly names under 60 domains, some on
   * another port, a tenth for reasons no entry fixes) and allowed at five; nine other agents'
   * refusals, allows and launch rows for the rest.
   */
  private static long generate(
      Store store, SteppingClock clock, Instant start, long rows, long refusals) {
    Random random = new Random(25);
    long step = Math.max(1, Duration.ofDays(6).toMillis() / rows);
    long written = 0;
    List<AuditEvent> batch = new ArrayList<>(BATCH);
    long plannerDenies = 0;
    while (written + batch.size() < rows) {
      AuditEvent event;
      // Exactly `refusals` of planner's refusals, spread evenly through the rows.
      if (plannerDenies < refusals && (written + batch.size()) % (rows / refusals) == 0) {
        plannerDenies++;
        event = deny("planner", "run-" + random.nextInt(RUNS), random);
      } else {
        int kind = random.nextInt(10);
        String agent = kind < 1 ? "planner" : "other" + (1 + random.nextInt(9));
        String run = agent + "-run-" + random.nextInt(RUNS);
        if (kind < 1) {
          event =
              allow(
                  agent,
                  "run-" + random.nextInt(RUNS),
                  ALLOWED.get(random.nextInt(ALLOWED.size())));
        } else if (kind < 5) {
          event = deny(agent, run, random);
        } else if (kind < 8) {
          event = allow(agent, run, ALLOWED.get(random.nextInt(ALLOWED.size())));
        } else {
          event =
              new AuditEvent(
                  "agent_sandbox.launch",
                  "bench",
                  agent,
                  run,
                  JSON.createObjectNode()
                      .put("backend", "docker")
                      .put("image", "agent-sandbox/workload:dev"));
        }
      }
      batch.add(event);
      if (batch.size() == BATCH) {
        clock.millis.addAndGet(step * BATCH);
        store.audit().appendAll(batch);
        written += batch.size();
        batch.clear();
      }
    }
    if (!batch.isEmpty()) {
      store.audit().appendAll(batch);
      written += batch.size();
    }
    return written;
  }

  private static AuditEvent deny(String agent, String run, Random random) {
    int pick = random.nextInt(100);
    String host;
    int port = 443;
    String reason = "not-allowed";
    if (pick < 5) {
      host = "10.0." + random.nextInt(256) + "." + random.nextInt(256);
      reason = "ip-literal";
    } else if (pick < 10) {
      host = "internal" + random.nextInt(20) + ".corp.example";
      reason = "non-public-address";
    } else if (pick < 15) {
      host = "h" + random.nextInt(400) + ".d" + random.nextInt(60) + ".example.org";
      port = 8443;
    } else {
      host = "h" + random.nextInt(400) + ".d" + random.nextInt(60) + ".example.org";
    }
    return new AuditEvent(
        "agent_sandbox.egress.deny",
        "bench",
        agent,
        run,
        JSON.createObjectNode()
            .put("client", "172.18.0.3:" + (30000 + random.nextInt(30000)))
            .put("method", "CONNECT")
            .put("host", host)
            .put("port", port)
            .put("reason", reason)
            .putNull("address")
            .put("first", false));
  }

  private static AuditEvent allow(String agent, String run, String host) {
    return new AuditEvent(
        "agent_sandbox.egress.allow",
        "bench",
        agent,
        run,
        JSON.createObjectNode()
            .put("client", "172.18.0.3:40000")
            .put("method", "CONNECT")
            .put("host", host)
            .put("port", 443)
            .put("reason", "allowed")
            .put("address", "198.18.0.1")
            .put("first", true));
  }

  private static void configure(HttpClient http, AgentSandboxServer server, String admin)
      throws Exception {
    ObjectNode agents = JSON.createObjectNode();
    agents.putObject("planner").set("allow", JSON.valueToTree(ALLOWED));
    for (int i = 1; i <= 9; i++) {
      agents.putObject("other" + i).set("allow", JSON.valueToTree(ALLOWED));
    }
    ObjectNode document = JSON.createObjectNode();
    document.put("enabled", true).put("reason", "EvidenceBench").set("agents", agents);
    send(http, server, admin, "PUT", CONFIG, document.toString());
  }

  private static ObjectNode editable(JsonNode view) {
    ObjectNode document = view.deepCopy();
    document.remove(List.of("updated_at", "updated_by"));
    document.path("agents").forEach(agent -> ((ObjectNode) agent).remove("effective_allow"));
    return document;
  }

  private static String send(
      HttpClient http,
      AgentSandboxServer server,
      String token,
      String method,
      String path,
      String body)
      throws Exception {
    return checked(exchange(http, server, token, method, path, body), body);
  }

  /** One exchange, unchecked, so a timed loop can measure it alone and {@link #checked} after. */
  private static HttpResponse<String> exchange(
      HttpClient http,
      AgentSandboxServer server,
      String token,
      String method,
      String path,
      String body)
      throws Exception {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create(server.baseUrl() + path))
            .timeout(Duration.ofMinutes(5))
            .header("Authorization", "Bearer " + token);
    if (body == null) {
      request.method(method, HttpRequest.BodyPublishers.noBody());
    } else {
      request
          .header("Content-Type", "application/json")
          .method(method, HttpRequest.BodyPublishers.ofString(body));
    }
    return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  /**
   * The exchange checked against openapi.json (outside any timing: the check is the harness's cost,
   * not the server's), then its status; answers its body.
   */
  private static String checked(HttpResponse<String> response, String body) {
    HttpRequest request = response.request();
    OpenApiContract.document()
        .check(
            new OpenApiContract.Exchange(
                request.method(),
                request.uri().getRawPath(),
                request.uri().getRawQuery(),
                request.headers().firstValue("Content-Type").orElse(null),
                body,
                response.statusCode(),
                response.headers().firstValue("Content-Type").orElse(null),
                response.body()));
    if (response.statusCode() / 100 != 2 && response.statusCode() != 403) {
      throw new IllegalStateException(
          request.method()
              + " "
              + request.uri().getRawPath()
              + ": "
              + response.statusCode()
              + " "
              + response.body());
    }
    return response.body();
  }

  /** CPU time of this whole process (server, client and collector threads alike). */
  private static long processCpuMillis() {
    return ((com.sun.management.OperatingSystemMXBean)
                java.lang.management.ManagementFactory.getOperatingSystemMXBean())
            .getProcessCpuTime()
        / 1_000_000;
  }

  private static String loadAverage() {
    try {
      return java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).strip();
    } catch (java.io.IOException e) {
      return "unknown (" + e.getMessage() + ")";
    }
  }

  private static long median(long[] values) {
    long[] sorted = values.clone();
    Arrays.sort(sorted);
    return sorted[sorted.length / 2];
  }

  private static long max(long[] values) {
    return Arrays.stream(values).max().orElse(0);
  }
}
