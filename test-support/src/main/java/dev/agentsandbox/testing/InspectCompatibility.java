package dev.agentsandbox.testing;

import static java.nio.charset.StandardCharsets.UTF_8;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The client compatibility suite against inspected hosts: curl, busybox wget, Python's urllib and
 * requests, the JDK's HttpClient, Node's fetch, {@code pip install} and {@code git clone} through a
 * run whose proxy terminates TLS for the {@link CompatUpstream}'s three names. Every client must
 * trust the run's CA through what the platform sets alone, reach what the rules allow (the answer
 * carries the upstream's token) and be refused what they do not (403 {@code path-not-allowed}).
 * Busybox wget is the exception to TLS: it sends an {@code https://} URL to a proxy as a plain
 * {@code GET} of the whole URL (no {@code CONNECT}) and does not verify certificates, so it is
 * tried over plain HTTP to the same inspected host, whose rules apply there too.
 */
public final class InspectCompatibility {
  /** Rounds per cell: {@code -Dasb.compat.inspect.rounds=N}, 5 by default. */
  public static final int ROUNDS = Integer.getInteger("asb.compat.inspect.rounds", 5);

  /** The command that runs the suite (the script travels in the environment). */
  public static final List<String> COMMAND =
      List.of("sh", "-c", "printf '%s' \"$ASB_SUITE\" >/tmp/suite.sh && exec sh /tmp/suite.sh");

  /** The credential the proxy injects on web.test: it must never show in an answer. */
  public static final String CREDENTIAL = "web";

  /** The clients and their cells. */
  public static final Map<String, List<String>> CELLS;

  static {
    Map<String, List<String>> cells = new LinkedHashMap<>();
    for (String client : List.of("curl", "wget", "urllib", "requests", "java", "node", "git")) {
      cells.put(client, List.of("inspected", "refused-path"));
    }
    cells.put("pip", List.of("inspected"));
    CELLS = java.util.Collections.unmodifiableMap(cells);
  }

  private static final Pattern LINE = Pattern.compile("(?m)^@@ (\\S+) (\\S+) (\\d+) (.*)$");
  private static final ObjectMapper JSON = new ObjectMapper();

  private InspectCompatibility() {}

  /** The rules of each inspected host: exactly what the suite's clients need, nothing more. */
  public static Map<String, List<String>> rules() {
    Map<String, List<String>> rules = new LinkedHashMap<>();
    rules.put("web.test", List.of("GET,HEAD /hello"));
    rules.put("pypi.test", List.of("GET /simple/**", "GET /packages/**"));
    rules.put("git.test", List.of("GET /repo.git/**", "POST /repo.git/git-upload-pack"));
    return rules;
  }

  /** The suite's environment. */
  public static Map<String, String> env(CompatUpstream upstream, int rounds) throws IOException {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("ASB_ROUNDS", Integer.toString(rounds));
    env.put("ASB_TLS_PORT", Integer.toString(upstream.tlsPort()));
    env.put("ASB_HTTP_PORT", Integer.toString(upstream.httpPort()));
    env.put("ASB_SUITE", resource("inspect-suite.sh"));
    env.put("ASB_PROBE_JAVA", resource("InspectProbe.java"));
    env.put("ASB_PROBE_NODE", resource("inspect-probe.js"));
    return env;
  }

  /**
   * What one sandbox's suite came to.
   *
   * @param table passes per cell, printable
   * @param failures one line per failing attempt
   * @param refusals the proxy's {@code path-not-allowed} decisions
   * @param ranToEnd whether the output carries the suite's last line
   */
  public record Verdict(String table, List<String> failures, long refusals, boolean ranToEnd) {}

  /** Judges the output and the proxy's decisions. */
  public static Verdict judge(
      int rounds,
      CompatUpstream upstream,
      String credentialValue,
      String output,
      List<String> decisions) {
    Map<String, Integer> passes = new TreeMap<>();
    List<String> failures = new ArrayList<>();
    Matcher m = LINE.matcher(output);
    while (m.find()) {
      String client = m.group(1);
      String cell = m.group(2);
      String result = m.group(4);
      boolean ok =
          result.contains(credentialValue)
              ? false
              : cell.equals("inspected")
                  ? inspected(client, result, upstream.token)
                  : refused(client, result);
      if (ok) {
        passes.merge(client + " " + cell, 1, Integer::sum);
      } else {
        failures.add(client + " " + cell + " " + m.group(3) + ": " + result);
      }
    }
    StringBuilder table =
        new StringBuilder("| client | inspected | refused-path |\n|---|---|---|\n");
    CELLS.forEach(
        (client, cells) -> {
          table.append("| ").append(client);
          for (String cell : List.of("inspected", "refused-path")) {
            table
                .append(" | ")
                .append(
                    cells.contains(cell)
                        ? passes.getOrDefault(client + " " + cell, 0) + "/" + rounds
                        : "—");
          }
          table.append(" |\n");
          for (String cell : cells) {
            if (passes.getOrDefault(client + " " + cell, 0) != rounds
                && failures.stream().noneMatch(f -> f.startsWith(client + " " + cell))) {
              failures.add(
                  client
                      + " "
                      + cell
                      + ": "
                      + passes.getOrDefault(client + " " + cell, 0)
                      + " of "
                      + rounds
                      + " attempts reported");
            }
          }
        });
    long refusals = 0;
    for (String line : decisions) {
      try {
        JsonNode d = JSON.readTree(line);
        if ("path-not-allowed".equals(d.path("reason").asText())) {
          refusals++;
        }
      } catch (IOException e) {
        failures.add("a proxy output line that is not a decision: " + line);
      }
    }
    return new Verdict(table.toString(), failures, refusals, output.contains("@@ suite done"));
  }

  private static boolean inspected(String client, String result, String token) {
    return switch (client) {
      case "pip" -> result.startsWith("installed=" + token);
      case "git" -> result.startsWith("cloned=" + token);
      default -> result.startsWith("status=200 ") && result.contains(token);
    };
  }

  private static boolean refused(String client, String result) {
    return switch (client) {
      case "wget", "git" -> result.startsWith("error=") && result.contains("403");
      default -> result.startsWith("status=403 ") && result.contains("path-not-allowed");
    };
  }

  private static String resource(String name) throws IOException {
    try (InputStream in =
        InspectCompatibility.class.getResourceAsStream(
            "/dev/agentsandbox/testing/compat/" + name)) {
      if (in == null) {
        throw new IOException("the suite's resource " + name + " is missing");
      }
      return new String(in.readAllBytes(), UTF_8);
    }
  }
}
