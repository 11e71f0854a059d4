package dev.agentsandbox.backend.docker;

import static dev.agentsandbox.backend.docker.DockerItSupport.labelledResources;
import static dev.agentsandbox.backend.docker.DockerItSupport.newRunId;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.docker.DockerItSupport.RecordingListener;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.InternalDestination;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.RunEgress;
import dev.agentsandbox.testing.Host;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The client compatibility suite (docs/reliability.md): inside one sandbox per runtime, each of
 * curl, busybox wget, Python's urllib and requests, the JDK's HttpClient, Node's fetch, {@code pip
 * install} and {@code git clone} over HTTPS goes {@link #ROUNDS} times through the run's proxy to
 * an allowed host this test serves (the body must carry the test's token), to a refused host (the
 * proxy must refuse, and its deny decision is counted: one per attempt), to the upstream's address
 * through the proxy (refused, counted) and straight to that address past the proxy (must fail: the
 * sandbox's network has no other way out). Every cell must pass every time; one flaky attempt fails
 * the test. {@code -Dasb.compat.rounds=N} sets the rounds (20 by default), {@code
 * -Dasb.compat.runtimes=runsc} limits the runtimes.
 */
class ClientCompatibilityIT {
  static final String IMAGE = "agent-sandbox/clients:dev";
  static final int ROUNDS = Integer.getInteger("asb.compat.rounds", 20);
  private static final String RESOURCES = "/dev/agentsandbox/backend/docker/compat/";
  private static final Pattern LINE = Pattern.compile("(?m)^@@ (\\S+) (\\S+) (\\d+) (.*)$");
  private static final Pattern PHASE = Pattern.compile("(?m)^@# (\\S+) (\\d+)$");
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The clients and their cells, in the order of the table in docs/reliability.md. */
  private static final Map<String, List<String>> CELLS = new LinkedHashMap<>();

  static {
    List<String> web = List.of("allowed", "allowed-tls", "refused", "by-ip", "direct-ip");
    List<String> plain = List.of("allowed", "refused", "by-ip", "direct-ip");
    CELLS.put("curl", web);
    CELLS.put("wget", plain);
    CELLS.put("urllib", web);
    CELLS.put("requests", web);
    CELLS.put("java", web);
    CELLS.put("node", web);
    CELLS.put("pip", plain);
    CELLS.put("git", plain);
  }

  private static DockerClient client;
  private static CompatUpstream upstream;
  private static final Set<String> runIds = ConcurrentHashMap.newKeySet();

  @BeforeAll
  static void standUp() throws Exception {
    client = DockerItSupport.requireDaemon();
    try {
      client.inspectImageCmd(IMAGE).exec();
    } catch (RuntimeException e) {
      fail(
          "The client compatibility suite needs image "
              + IMAGE
              + ": "
              + DockerErrors.describe(e)
              + " (run images/build.sh clients)");
    }
    assumeTrue(Host.canAddLinks(), "the upstream lives on a dummy interface: needs root and ip");
    upstream = CompatUpstream.start();
  }

  @AfterAll
  static void tearDown() throws Exception {
    if (upstream != null) {
      upstream.close();
    }
    if (client != null) {
      // Only this class's runs: other Docker ITs may be running on the same daemon.
      Predicate<String> ours = runIds::contains;
      new DockerReaper(client).reap(Instant.now(), ours.negate());
      assertThat(labelledResources(client))
          .as("containers, networks and volumes of this class's runs left behind")
          .noneMatch(name -> runIds.stream().anyMatch(name::contains));
    }
  }

  /** Every runtime the daemon has, or those named in {@code -Dasb.compat.runtimes=a,b}. */
  static List<String> runtimes() {
    List<String> named = List.of(System.getProperty("asb.compat.runtimes", "").split(","));
    return DockerItSupport.runtimes().stream()
        .filter(r -> named.equals(List.of("")) || named.contains(r))
        .toList();
  }

  @ParameterizedTest(name = "every client, every cell, every time, under {0}")
  @MethodSource("runtimes")
  void everyClientEveryCellEveryTime(String runtime) throws Exception {
    int httpPort = upstream.httpPort();
    int tlsPort = upstream.tlsPort();
    List<String> address = List.of(CompatUpstream.ADDRESS);
    RunEgress egress =
        new RunEgress(
            AllowList.parse(
                List.of(
                    "web.test:" + httpPort,
                    "web.test:" + tlsPort,
                    "pypi.test:" + tlsPort,
                    "git.test:" + tlsPort)),
            Optional.empty(),
            List.of(InternalDestination.range("compat", CompatUpstream.CIDR, httpPort, tlsPort)),
            Map.of("web.test", address, "pypi.test", address, "git.test", address));
    Map<String, String> env = new LinkedHashMap<>();
    env.put("ASB_ROUNDS", Integer.toString(ROUNDS));
    env.put("ASB_IP", CompatUpstream.ADDRESS);
    env.put("ASB_HTTP_PORT", Integer.toString(httpPort));
    env.put("ASB_TLS_PORT", Integer.toString(tlsPort));
    env.put("ASB_CA", upstream.caPem);
    env.put("ASB_SUITE", resource("suite.sh"));
    env.put("ASB_PROBE_JAVA", resource("Probe.java"));
    env.put("ASB_PROBE_NODE", resource("probe.js"));
    env.put("ASB_PROBE_PYTHON", resource("probe.py"));
    String runId = newRunId();
    runIds.add(runId);
    // Bounded: a round took about 35 s per runtime on this project's 2-core VM at load average 26
    // (docs/reliability.md); the TTL ends a run that hangs, and the test then fails.
    Duration ttl = Duration.ofSeconds(180 + 60L * ROUNDS);
    RunSpec spec =
        new RunSpec(
            runId,
            "it-agent",
            IMAGE,
            List.of(
                "sh", "-c", "printf '%s' \"$ASB_SUITE\" >/tmp/suite.sh && exec sh /tmp/suite.sh"),
            env,
            egress,
            new Resources(1, 768, 256),
            ttl,
            Instant.now().plus(Duration.ofMinutes(60)),
            false);
    RecordingListener listener = new RecordingListener();
    DockerBackend backend = new DockerBackend(client, DockerBackendConfig.defaults());
    Instant started = Instant.now();
    String output;
    Completion completion;
    try (Sandbox sandbox = backend.launch(spec, listener, runtime)) {
      completion = sandbox.await(Instant.now().plus(ttl).plusSeconds(30));
      output = listener.output();
    }
    Duration took = Duration.between(started, Instant.now());

    Map<String, List<String>> results = new LinkedHashMap<>();
    Matcher matcher = LINE.matcher(output);
    while (matcher.find()) {
      results
          .computeIfAbsent(matcher.group(1) + " " + matcher.group(2), k -> new ArrayList<>())
          .add(matcher.group(4));
    }
    Map<String, Long> denials = new LinkedHashMap<>();
    long allowed = 0;
    for (String line : listener.decisions) {
      JsonNode decision = JSON.readTree(line);
      if (decision.path("decision").asText().equals("deny")) {
        denials.merge(
            decision.path("host").asText() + ":" + decision.path("port").asInt(), 1L, Long::sum);
      } else {
        allowed++;
      }
    }

    List<String> failures = new ArrayList<>();
    StringBuilder table = new StringBuilder();
    table.append(String.format("client compatibility under %s, %d rounds:%n", runtime, ROUNDS));
    for (Map.Entry<String, List<String>> client : CELLS.entrySet()) {
      table.append(String.format("  %-9s", client.getKey()));
      for (String cell : client.getValue()) {
        List<String> got = results.getOrDefault(client.getKey() + " " + cell, List.of());
        Predicate<String> pass = expectation(client.getKey(), cell);
        long passed = got.stream().filter(pass).count();
        table.append(String.format(" %s %d/%d", cell, passed, ROUNDS));
        if (passed != ROUNDS || got.size() != ROUNDS) {
          failures.add(
              String.format(
                  "%s %s: %d of %d attempts passed (%d reported); first failing: %s",
                  client.getKey(),
                  cell,
                  passed,
                  ROUNDS,
                  got.size(),
                  got.stream().filter(pass.negate()).findFirst().orElse("(none reported)")));
        }
      }
      table.append(System.lineSeparator());
    }
    // One deny decision per refused attempt: a client that retried, or a refusal the proxy did not
    // record, shows here. The "by-ip" attempts go to the upstream's own address and ports.
    Map<String, Long> expectedDenials = new LinkedHashMap<>();
    for (String name : CELLS.keySet()) {
      boolean tls = name.equals("pip") || name.equals("git");
      expectedDenials.put(name + ".refused.test:" + (tls ? tlsPort : httpPort), (long) ROUNDS);
    }
    expectedDenials.put(CompatUpstream.ADDRESS + ":" + httpPort, 6L * ROUNDS);
    expectedDenials.put(CompatUpstream.ADDRESS + ":" + tlsPort, 2L * ROUNDS);
    Matcher phases = PHASE.matcher(output);
    List<String> marks = new ArrayList<>(List.of("launch@" + started.getEpochSecond()));
    while (phases.find()) {
      marks.add(phases.group(1) + "@" + phases.group(2));
    }
    table.append("  phases (name@epoch seconds): ").append(marks).append(System.lineSeparator());
    table.append(
        String.format(
            "  deny decisions %s (expected %s); allow decisions %d; %d s%n",
            denials, expectedDenials, allowed, took.toSeconds()));
    System.out.print(table);
    Path report = Path.of("target", "client-compatibility-" + runtime + ".txt");
    Files.createDirectories(report.getParent());
    Files.writeString(report, table + String.join(System.lineSeparator(), failures), UTF_8);

    assertThat(completion.end())
        .as("the suite's end under %s; output:%n%s", runtime, output)
        .isEqualTo(Completion.End.EXIT);
    assertThat(output).as("the suite ran to its end").contains("@@ suite done");
    assertThat(failures)
        .as(
            "failing cells under %s%n%s%ngit http-backend: %s",
            runtime, table, upstream.backendLog())
        .isEmpty();
    assertThat(denials).as("deny decisions by host:port").isEqualTo(expectedDenials);
  }

  /** What one attempt of a cell must have reported. */
  private static Predicate<String> expectation(String client, String cell) {
    String body = "status=200 body=" + upstream.body();
    return switch (cell) {
      case "allowed", "allowed-tls" ->
          switch (client) {
            case "pip" -> r -> r.equals("installed=" + upstream.token);
            case "git" -> r -> r.equals("cloned=" + upstream.token);
            default -> r -> r.equals(body);
          };
      case "refused", "by-ip" ->
          switch (client) {
            // busybox wget says "server returned error: HTTP/1.1 403 Forbidden".
            case "wget" -> r -> r.startsWith("error=") && r.contains("403 Forbidden");
            // Refused CONNECTs: the tools report the tunnel's failure, never the body. undici's
            // ProxyAgent (Node) tunnels plain HTTP through CONNECT too, so its refusals are that.
            case "pip", "git", "node" -> r -> r.startsWith("error=") && !r.contains(upstream.token);
            default -> r -> r.startsWith("status=403 ");
          };
      case "direct-ip" -> r -> r.startsWith("error=") && !r.contains(upstream.token);
      default -> throw new IllegalArgumentException("unknown cell " + cell);
    };
  }

  private static String resource(String name) throws IOException {
    try (InputStream in = ClientCompatibilityIT.class.getResourceAsStream(RESOURCES + name)) {
      if (in == null) {
        throw new IOException("test resource " + RESOURCES + name + " is missing");
      }
      return new String(in.readAllBytes(), UTF_8);
    }
  }
}
