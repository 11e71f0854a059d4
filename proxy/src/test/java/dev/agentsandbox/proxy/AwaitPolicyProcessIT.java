package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.config.ProxyLines;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shaded jar started with {@code --await-policy}, its policy written to its standard input by
 * this test as a backend would: refusals before, the applied and ready lines, the policy in force
 * after, a second policy refused; and every way the channel can go wrong (malformed, inconsistent
 * with what was fixed at start, ended without a policy) leaves a proxy that refused everything and
 * exits 2 with one line.
 */
class AwaitPolicyProcessIT {
  private static final Path JAR = Path.of("target", "agent-sandbox-proxy.jar");
  private static final Pattern AWAITING =
      Pattern.compile(Pattern.quote(ProxyLines.AWAITING_POLICY) + "127\\.0\\.0\\.1:(\\d+)");

  @TempDir Path temp;
  private Fixture fixture;
  private final List<Process> started = new ArrayList<>();

  @BeforeEach
  void upstreams() throws Exception {
    fixture = new Fixture();
  }

  @AfterEach
  void stop() throws Exception {
    for (Process process : started) {
      process.destroy();
      assertThat(process.waitFor(20, TimeUnit.SECONDS)).isTrue();
    }
    fixture.close();
  }

  /** A started proxy, its stderr lines and the port it listens on. */
  private record Pending(Process process, BufferedReader err, int port, Path decisions) {
    String proxyUrl() {
      return "http://127.0.0.1:" + port;
    }

    void send(String text) throws IOException {
      OutputStream in = process.getOutputStream();
      in.write(text.getBytes(StandardCharsets.UTF_8));
      in.flush();
    }
  }

  private Pending start() throws Exception {
    Path decisions = temp.resolve("decisions-" + started.size() + ".jsonl");
    Process process =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-Xmx64m",
                "-jar",
                JAR.toString(),
                "--await-policy",
                "--listen",
                "127.0.0.1:0",
                "--decisions",
                decisions.toString())
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    started.add(process);
    BufferedReader err =
        new BufferedReader(new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8));
    String line = err.readLine();
    assertThat(line).isNotNull();
    Matcher matcher = AWAITING.matcher(line);
    assertThat(matcher.matches()).as(line).isTrue();
    return new Pending(process, err, Integer.parseInt(matcher.group(1)), decisions);
  }

  private String policy(String allowHost, String extra) {
    return """
        {"allow": ["%s:%d"], "internal": [{"cidr": "127.0.0.2/32", "ports": [%d]}],
         "hosts": {"api.test": ["127.0.0.2"], "other.test": ["127.0.0.2"]},
         "run_id": "pooled-1"%s}
        """
        .formatted(allowHost, fixture.port, fixture.port, extra);
  }

  @Test
  void refusesUntilThePolicyArrivesOnStdinThenServesItAndRefusesASecond() throws Exception {
    Pending proxy = start();
    assertThat(curl(proxy, "http://api.test:" + fixture.port + "/early"))
        .startsWith("HTTP/1.1 403")
        .containsIgnoringCase("X-Agent-Sandbox-Denied: policy-pending");
    assertThat(curl(proxy, "-p", "http://api.test:" + fixture.port + "/early"))
        .contains("HTTP/1.1 403")
        .containsIgnoringCase("X-Agent-Sandbox-Denied: policy-pending");

    // Not closed after the document: the proxy reads it as soon as it is whole. The fixed parts
    // it repeats (decisions) match what the proxy started with.
    proxy.send(policy("api.test", ", \"decisions\": \"" + proxy.decisions() + "\""));
    assertThat(proxy.err().readLine()).isEqualTo(ProxyLines.POLICY_APPLIED + " for run pooled-1");
    assertThat(proxy.err().readLine())
        .isEqualTo("agent-sandbox proxy ready on 127.0.0.1:" + proxy.port());

    assertThat(curl(proxy, "http://api.test:" + fixture.port + "/late"))
        .startsWith("HTTP/1.1 200")
        .contains("hello from api");
    assertThat(curl(proxy, "http://other.test:" + fixture.port + "/late"))
        .startsWith("HTTP/1.1 403")
        .containsIgnoringCase("X-Agent-Sandbox-Denied: not-allowed");

    // A second policy, allowing other.test, is refused; the first stays in force.
    proxy.send(policy("other.test", ""));
    assertThat(proxy.err().readLine()).contains("refused a second policy");
    assertThat(curl(proxy, "http://other.test:" + fixture.port + "/second"))
        .startsWith("HTTP/1.1 403")
        .containsIgnoringCase("X-Agent-Sandbox-Denied: not-allowed");
    assertThat(proxy.process().isAlive()).isTrue();

    List<JsonNode> lines =
        await("five decision lines")
            .atMost(Duration.ofSeconds(5))
            .until(() -> decisionLines(proxy.decisions()), read -> read.size() >= 5);
    assertThat(lines)
        .extracting(n -> n.get("reason").asText())
        .containsExactlyInAnyOrder(
            "policy-pending", "policy-pending", "allowed", "not-allowed", "not-allowed");
    assertThat(lines)
        .filteredOn(n -> !n.get("reason").asText().equals("policy-pending"))
        .allMatch(n -> n.get("run_id").asText().equals("pooled-1"));
    assertThat(fixture.api.seen()).extracting(Upstream.Seen::path).containsExactly("/late");
    assertThat(fixture.trap.seen()).isEmpty();
  }

  @Test
  void aMalformedPolicyLeavesItRefusingThenItExitsTwoWithOneLine() throws Exception {
    Pending proxy = start();
    proxy.send("{\"allow\": [\"api.test:" + fixture.port + "\"], ");
    // Half a document: still pending, still refusing.
    assertThat(curl(proxy, "http://api.test:" + fixture.port + "/half"))
        .containsIgnoringCase("X-Agent-Sandbox-Denied: policy-pending");
    proxy.send("\"allow\": []}");
    assertExitsTwoWith(proxy, "Duplicate field 'allow'");
  }

  @Test
  void aPolicyThatContradictsWhatWasFixedAtStartIsRefused() throws Exception {
    Pending proxy = start();
    proxy.send(policy("api.test", ", \"listen\": \"0.0.0.0:3128\""));
    assertExitsTwoWith(proxy, "listen: '0.0.0.0:3128' is not where this proxy listens");

    Pending other = start();
    other.send(policy("api.test", ", \"decisions\": \"-\""));
    assertExitsTwoWith(other, "decisions: '-' is not where this proxy writes its decisions");

    Pending third = start();
    third.send(policy("api.test", ", \"limits\": {\"max_connections\": 7}"));
    assertExitsTwoWith(third, "limits: differ");

    Pending fourth = start();
    fourth.send("{\"allow\": [\"*\"]}");
    assertExitsTwoWith(fourth, "policy on standard input: allow[0]");

    Pending fifth = start();
    fifth.send("{not json}");
    assertExitsTwoWith(fifth, "policy on standard input: Unexpected character");
  }

  @Test
  void stdinClosedWithoutAPolicyExitsTwoAndNothingWasEverServed() throws Exception {
    Pending proxy = start();
    assertThat(curl(proxy, "http://api.test:" + fixture.port + "/eof"))
        .containsIgnoringCase("X-Agent-Sandbox-Denied: policy-pending");
    proxy.process().getOutputStream().close();
    assertExitsTwoWith(proxy, "standard input ended before a policy arrived");
    assertThatThrownBy(() -> new Socket("127.0.0.1", proxy.port()).close())
        .isInstanceOf(IOException.class);
    assertThat(fixture.api.seen()).isEmpty();
    assertThat(fixture.trap.seen()).isEmpty();
  }

  @Test
  void awaitPolicyRefusesPolicyOptionsOnTheCommandLine() throws Exception {
    Process process =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-jar",
                JAR.toString(),
                "--await-policy",
                "--listen",
                "127.0.0.1:0",
                "--allow",
                "api.test")
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    String err = new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(process.exitValue()).isEqualTo(2);
    assertThat(err.strip().lines())
        .singleElement()
        .asString()
        .contains("--await-policy takes only");
  }

  private void assertExitsTwoWith(Pending proxy, String reason) throws Exception {
    assertThat(proxy.process().waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(proxy.process().exitValue()).isEqualTo(2);
    List<String> rest = proxy.err().lines().toList();
    assertThat(rest).singleElement().asString().contains(reason).contains("exiting");
    assertThat(fixture.api.seen()).isEmpty();
  }

  private static List<JsonNode> decisionLines(Path decisions) throws Exception {
    List<JsonNode> lines = new ArrayList<>();
    if (!Files.exists(decisions)) {
      return lines;
    }
    for (String line : Files.readAllLines(decisions)) {
      lines.add(new ObjectMapper().readTree(line));
    }
    return lines;
  }

  private static String curl(Pending proxy, String... args) throws Exception {
    List<String> command =
        new ArrayList<>(
            List.of(Curl.path(), "-sS", "-i", "--max-time", "20", "-x", proxy.proxyUrl()));
    command.addAll(List.of(args));
    Process curl = new ProcessBuilder(command).redirectErrorStream(true).start();
    String output = new String(curl.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(curl.waitFor(30, TimeUnit.SECONDS)).isTrue();
    return output;
  }
}
