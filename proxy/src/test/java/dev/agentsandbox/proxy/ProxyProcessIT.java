package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shaded jar as a real process, the way a sandbox runs it: the ready line on stderr, curl
 * through it, decisions in a file, metrics over HTTP, exit on SIGTERM, exit 2 on bad input.
 */
class ProxyProcessIT {
  private static final Path JAR = Path.of("target", "agent-sandbox-proxy.jar");
  private static final Pattern READY =
      Pattern.compile("agent-sandbox proxy ready on 127\\.0\\.0\\.1:(\\d+)");

  @TempDir Path temp;

  private static String java() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  @Test
  void theJarServesDecidesReportsAndStops() throws Exception {
    try (Upstream api = Upstream.http(Fixture.PERMITTED, "api")) {
      Path hosts = temp.resolve("hosts");
      Files.writeString(hosts, "127.0.0.2 api.test not-allowed.test\n127.0.0.3 evil.test\n");
      Path decisions = temp.resolve("decisions.jsonl");
      int metricsPort = Fixture.freePort("127.0.0.1");
      List<String> command =
          List.of(
              java(),
              "-XX:+UseSerialGC",
              "-XX:TieredStopAtLevel=1",
              "-Xss256k",
              "-Xmx64m",
              "-jar",
              JAR.toString(),
              "--listen",
              "127.0.0.1:0",
              "--allow",
              "api.test:" + api.port() + ",evil.test:" + api.port(),
              "--internal-cidr",
              "127.0.0.2/32:" + api.port(),
              "--hosts",
              hosts.toString(),
              "--decisions",
              decisions.toString(),
              "--run-id",
              "proc-1",
              "--metrics",
              "127.0.0.1:" + metricsPort);
      long started = System.nanoTime();
      Process process =
          new ProcessBuilder(command).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
      try {
        BufferedReader err =
            new BufferedReader(
                new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8));
        String ready = err.readLine();
        long readyMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        assertThat(ready).isNotNull();
        Matcher matcher = READY.matcher(ready);
        assertThat(matcher.matches()).as(ready).isTrue();
        int port = Integer.parseInt(matcher.group(1));
        String proxy = "http://127.0.0.1:" + port;

        assertThat(curl(proxy, "http://api.test:" + api.port() + "/proc"))
            .startsWith("HTTP/1.1 200")
            .contains("hello from api");
        assertThat(curl(proxy, "http://not-allowed.test:" + api.port() + "/proc"))
            .startsWith("HTTP/1.1 403");
        assertThat(curl(proxy, "http://evil.test:" + api.port() + "/proc"))
            .startsWith("HTTP/1.1 403");

        List<JsonNode> lines =
            await("three decision lines")
                .atMost(Duration.ofSeconds(5))
                .pollInterval(Duration.ofMillis(20))
                .until(() -> decisionLines(decisions), read -> read.size() >= 3);
        assertThat(lines)
            .extracting(n -> n.get("reason").asText())
            .containsExactlyInAnyOrder("allowed", "not-allowed", "non-public-address");
        assertThat(lines).allMatch(n -> n.get("run_id").asText().equals("proc-1"));
        // An allow is reported when its response is done, so it may land after the next refusal.
        assertThat(lines)
            .filteredOn(n -> n.get("decision").asText().equals("allow"))
            .singleElement()
            .satisfies(n -> assertThat(n.get("first").asBoolean()).isTrue());

        String metrics;
        try (HttpClient client = HttpClient.newHttpClient()) {
          metrics =
              client
                  .send(
                      HttpRequest.newBuilder(
                              URI.create("http://127.0.0.1:" + metricsPort + "/metrics"))
                          .build(),
                      HttpResponse.BodyHandlers.ofString())
                  .body();
        }
        assertThat(metrics)
            .contains(
                "agent_sandbox_proxy_decisions_total{decision=\"deny\",reason=\"not-allowed\"} 1")
            .contains(
                "agent_sandbox_proxy_decisions_total{decision=\"allow\",reason=\"allowed\"} 1")
            .contains("agent_sandbox_proxy_open_tunnels");

        long rssKiB = rssKiB(process.pid());
        System.out.println(
            "proxy process: ready after "
                + readyMs
                + " ms (JVM start included), RSS "
                + rssKiB
                + " KiB after 3 requests");
      } finally {
        process.destroy();
        assertThat(process.waitFor(20, TimeUnit.SECONDS)).isTrue();
      }
    }
  }

  /**
   * The proxy image's launcher form, exactly {@code --policy FILE}, which skips the command-line
   * parser: it must serve, refuse and stop like the parsed form.
   */
  @Test
  void thePolicyFileFormServesAndRefuses() throws Exception {
    try (Upstream api = Upstream.http(Fixture.PERMITTED, "api")) {
      Path policy = temp.resolve("policy.json");
      Files.writeString(
          policy,
          """
          {"listen": "127.0.0.1:0", "allow": ["api.test:%d"], "internal": [{"cidr": "127.0.0.2/32", "ports": [%d]}],
           "hosts": {"api.test": ["127.0.0.2"], "other.test": ["127.0.0.2"]}}
          """
              .formatted(api.port(), api.port()));
      Process process =
          new ProcessBuilder(
                  java(), "-Xmx64m", "-jar", JAR.toString(), "--policy", policy.toString())
              .redirectOutput(ProcessBuilder.Redirect.DISCARD)
              .start();
      try {
        BufferedReader err =
            new BufferedReader(
                new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8));
        String ready = err.readLine();
        assertThat(ready).isNotNull();
        Matcher matcher = READY.matcher(ready);
        assertThat(matcher.matches()).as(ready).isTrue();
        String proxy = "http://127.0.0.1:" + matcher.group(1);
        assertThat(curl(proxy, "http://api.test:" + api.port() + "/p"))
            .startsWith("HTTP/1.1 200")
            .contains("hello from api");
        assertThat(curl(proxy, "http://other.test:" + api.port() + "/p"))
            .startsWith("HTTP/1.1 403");
      } finally {
        process.destroy();
        assertThat(process.waitFor(20, TimeUnit.SECONDS)).isTrue();
      }
    }
  }

  @Test
  void badInputExitsWithTwoAndOneLine() throws Exception {
    Process process =
        new ProcessBuilder(
                java(), "-jar", JAR.toString(), "--listen", "127.0.0.1:0", "--allow", "*")
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    String err = new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(process.exitValue()).isEqualTo(2);
    assertThat(err.strip().lines())
        .containsExactly("agent-sandbox proxy: --allow[0] '*': a bare * is refused");
  }

  private static List<JsonNode> decisionLines(Path decisions) throws Exception {
    List<JsonNode> lines = new ArrayList<>();
    for (String line : Files.readAllLines(decisions)) {
      lines.add(new ObjectMapper().readTree(line));
    }
    return lines;
  }

  private static String curl(String proxy, String url) throws Exception {
    Process curl =
        new ProcessBuilder(Curl.path(), "-sS", "-i", "--max-time", "20", "-x", proxy, url)
            .redirectErrorStream(true)
            .start();
    String output = new String(curl.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(curl.waitFor(30, TimeUnit.SECONDS)).isTrue();
    return output;
  }

  private static long rssKiB(long pid) throws Exception {
    for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
      if (line.startsWith("VmRSS:")) {
        return Long.parseLong(line.replaceAll("[^0-9]", ""));
      }
    }
    return -1;
  }
}
