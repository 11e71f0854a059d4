package dev.agentsandbox.testing;

import static java.nio.charset.StandardCharsets.UTF_8;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
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
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The backend-neutral half of the client compatibility suite (docs/reliability.md): the script that
 * runs inside one sandbox ({@code compat/suite.sh} and its probes), the environment it needs, the
 * names the run must allow, and the judging of what it printed and of the proxy's decisions. Each
 * backend's IT launches the sandbox its own way and hands the output and decisions to {@link
 * #judge}.
 */
public final class ClientCompatibility {
  /** The image that carries the clients (images/build.sh clients). */
  public static final String IMAGE = "agent-sandbox/clients:dev";

  /** Rounds per cell: {@code -Dasb.compat.rounds=N}, 20 by default (the full form). */
  public static final int ROUNDS = Integer.getInteger("asb.compat.rounds", 20);

  /** The command that runs the suite inside the sandbox (the script travels in the environment). */
  public static final List<String> COMMAND =
      List.of("sh", "-c", "printf '%s' \"$ASB_SUITE\" >/tmp/suite.sh && exec sh /tmp/suite.sh");

  private static final String RESOURCES = "/dev/agentsandbox/testing/compat/";
  private static final Pattern LINE = Pattern.compile("(?m)^@@ (\\S+) (\\S+) (\\d+) (.*)$");
  private static final Pattern PHASE = Pattern.compile("(?m)^@# (\\S+) (\\d+)$");
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The clients and their cells, in the order of the table in docs/reliability.md. */
  public static final Map<String, List<String>> CELLS;

  static {
    List<String> web = List.of("allowed", "allowed-tls", "refused", "by-ip", "direct-ip");
    List<String> plain = List.of("allowed", "refused", "by-ip", "direct-ip");
    Map<String, List<String>> cells = new LinkedHashMap<>();
    cells.put("curl", web);
    cells.put("wget", plain);
    cells.put("urllib", web);
    cells.put("requests", web);
    cells.put("java", web);
    cells.put("node", web);
    cells.put("pip", plain);
    cells.put("git", plain);
    CELLS = java.util.Collections.unmodifiableMap(cells);
  }

  private ClientCompatibility() {}

  /** The allow-list entries the run needs: the upstream's three names on their ports. */
  public static List<String> allowEntries(CompatUpstream upstream) {
    return List.of(
        "web.test:" + upstream.httpPort(),
        "web.test:" + upstream.tlsPort(),
        "pypi.test:" + upstream.tlsPort(),
        "git.test:" + upstream.tlsPort());
  }

  /** The names the run's proxy resolves to the upstream's address. */
  public static Map<String, List<String>> hosts(CompatUpstream upstream) {
    List<String> address = List.of(upstream.layout.address());
    return Map.of("web.test", address, "pypi.test", address, "git.test", address);
  }

  /** The suite's environment: rounds, the upstream, its CA, the script and the probes. */
  public static Map<String, String> env(CompatUpstream upstream, int rounds) throws IOException {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("ASB_ROUNDS", Integer.toString(rounds));
    env.put("ASB_IP", upstream.layout.address());
    env.put("ASB_HTTP_PORT", Integer.toString(upstream.httpPort()));
    env.put("ASB_TLS_PORT", Integer.toString(upstream.tlsPort()));
    env.put("ASB_CA", upstream.caPem);
    env.put("ASB_SUITE", resource("suite.sh"));
    env.put("ASB_PROBE_JAVA", resource("Probe.java"));
    env.put("ASB_PROBE_NODE", resource("probe.js"));
    env.put("ASB_PROBE_PYTHON", resource("probe.py"));
    return env;
  }

  /**
   * What one sandbox's suite came to.
   *
   * @param table the per-cell counts, phases and decisions, printable
   * @param failures one line per failing cell; empty when every cell passed every time
   * @param denials deny decisions by {@code host:port}
   * @param expectedDenials what {@code denials} must be: one per refused or by-ip attempt
   * @param allowed allow decisions
   * @param ranToEnd whether the output carries the suite's last line
   */
  public record Verdict(
      String table,
      List<String> failures,
      Map<String, Long> denials,
      Map<String, Long> expectedDenials,
      long allowed,
      boolean ranToEnd) {}

  /**
   * Judges one sandbox's output and the proxy's decisions, prints the table and writes it (with the
   * failures) to {@code target/client-compatibility-<label>.txt}.
   */
  public static Verdict judge(
      String label,
      int rounds,
      CompatUpstream upstream,
      String output,
      List<String> decisionLines,
      Instant started,
      Duration took)
      throws IOException {
    int httpPort = upstream.httpPort();
    int tlsPort = upstream.tlsPort();
    Map<String, List<String>> results = new LinkedHashMap<>();
    Matcher matcher = LINE.matcher(output);
    while (matcher.find()) {
      results
          .computeIfAbsent(matcher.group(1) + " " + matcher.group(2), k -> new ArrayList<>())
          .add(matcher.group(4));
    }
    Map<String, Long> denials = new LinkedHashMap<>();
    long allowed = 0;
    for (String line : decisionLines) {
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
    table.append(String.format("client compatibility under %s, %d rounds:%n", label, rounds));
    for (Map.Entry<String, List<String>> client : CELLS.entrySet()) {
      table.append(String.format("  %-9s", client.getKey()));
      for (String cell : client.getValue()) {
        List<String> got = results.getOrDefault(client.getKey() + " " + cell, List.of());
        Predicate<String> pass = expectation(upstream, client.getKey(), cell);
        long passed = got.stream().filter(pass).count();
        table.append(String.format(" %s %d/%d", cell, passed, rounds));
        if (passed != rounds || got.size() != rounds) {
          failures.add(
              String.format(
                  "%s %s: %d of %d attempts passed (%d reported); first failing: %s",
                  client.getKey(),
                  cell,
                  passed,
                  rounds,
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
      expectedDenials.put(name + ".refused.test:" + (tls ? tlsPort : httpPort), (long) rounds);
    }
    expectedDenials.put(upstream.layout.address() + ":" + httpPort, 6L * rounds);
    expectedDenials.put(upstream.layout.address() + ":" + tlsPort, 2L * rounds);
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
    Path report = Path.of("target", "client-compatibility-" + label + ".txt");
    Files.createDirectories(report.getParent());
    Files.writeString(report, table + String.join(System.lineSeparator(), failures), UTF_8);
    return new Verdict(
        table.toString(),
        List.copyOf(failures),
        denials,
        expectedDenials,
        allowed,
        output.contains("@@ suite done"));
  }

  /** What one attempt of a cell must have reported. */
  static Predicate<String> expectation(CompatUpstream upstream, String client, String cell) {
    String body = "status=200 body=" + upstream.body();
    String token = upstream.token;
    return switch (cell) {
      case "allowed", "allowed-tls" ->
          switch (client) {
            case "pip" -> r -> r.equals("installed=" + token);
            case "git" -> r -> r.equals("cloned=" + token);
            default -> r -> r.equals(body);
          };
      case "refused", "by-ip" ->
          switch (client) {
            // busybox wget says "server returned error: HTTP/1.1 403 Forbidden".
            case "wget" -> r -> r.startsWith("error=") && r.contains("403 Forbidden");
            // Refused CONNECTs: the tools report the tunnel's failure, never the body. undici's
            // ProxyAgent (Node) tunnels plain HTTP through CONNECT too, so its refusals are that.
            case "pip", "git", "node" -> r -> r.startsWith("error=") && !r.contains(token);
            default -> r -> r.startsWith("status=403 ");
          };
      case "direct-ip" -> r -> r.startsWith("error=") && !r.contains(token);
      default -> throw new IllegalArgumentException("unknown cell " + cell);
    };
  }

  private static String resource(String name) throws IOException {
    try (InputStream in = ClientCompatibility.class.getResourceAsStream(RESOURCES + name)) {
      if (in == null) {
        throw new IOException("test resource " + RESOURCES + name + " is missing");
      }
      return new String(in.readAllBytes(), UTF_8);
    }
  }
}
