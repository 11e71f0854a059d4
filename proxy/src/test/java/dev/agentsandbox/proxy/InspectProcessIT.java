package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.config.ProxyPolicy;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shaded jar as a process with a policy that inspects a host, as every backend runs it: it
 * announces its run CA's certificate before the ready line, serves the inspected host with the
 * credential it read from its folder, and writes neither the CA's key nor the credential anywhere —
 * not its output, its decisions, its working folder or its temporary folder — and its port hands
 * out nothing of the CA to a workload that asks.
 */
class InspectProcessIT {
  private static final Path JAR = Path.of("target", "agent-sandbox-proxy.jar");
  private static final Pattern READY =
      Pattern.compile("agent-sandbox proxy ready on 127\\.0\\.0\\.1:(\\d+)");

  @TempDir Path temp;

  @Test
  void theJarAnnouncesItsCaServesTheHostAndKeepsItsSecrets() throws Exception {
    TestCa publicCa = TestCa.create("agent-sandbox test public CA");
    try (TlsUpstream api =
        new TlsUpstream(Fixture.PERMITTED, "api", publicCa.serverFor("api.test"))) {
      Path credentials = Files.createDirectories(temp.resolve("proxy-credentials"));
      Files.writeString(credentials.resolve("github"), InspectWorld.TOKEN + "\n");
      Path work = Files.createDirectories(temp.resolve("work"));
      Path tmp = Files.createDirectories(temp.resolve("tmp"));
      Map<String, Object> policy =
          Map.of(
              "listen", "127.0.0.1:0",
              "allow", List.of("api.test:" + api.port()),
              "internal",
                  List.of(Map.of("cidr", Fixture.PERMITTED + "/32", "ports", List.of(api.port()))),
              "hosts", Map.of("api.test", List.of(Fixture.PERMITTED)),
              "run_id", "inspect-proc",
              "decisions", "-",
              "inspect",
                  Map.of(
                      "hosts",
                          Map.of(
                              "api.test",
                              Map.of(
                                  "rules", List.of("GET /repos/acme/**"), "credential", "github")),
                      "ca_expires_at", Instant.now().plus(1, ChronoUnit.HOURS).toString(),
                      "credentials_dir", credentials.toString(),
                      "upstream_ca", publicCa.pem()));
      Path policyFile = temp.resolve("policy.json");
      Files.writeString(policyFile, new ObjectMapper().writeValueAsString(policy));
      Process process =
          new ProcessBuilder(
                  Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                  "-Djava.io.tmpdir=" + tmp,
                  "-jar",
                  JAR.toAbsolutePath().toString(),
                  "--policy",
                  policyFile.toString())
              .directory(work.toFile())
              .redirectOutput(temp.resolve("stdout").toFile())
              .redirectError(temp.resolve("stderr").toFile())
              .start();
      try {
        List<String> lines = List.of();
        for (int i = 0; i < 300 && lines.stream().noneMatch(l -> l.contains("ready on")); i++) {
          Thread.sleep(100);
          lines = Files.readAllLines(temp.resolve("stderr"));
        }
        assertThat(lines).as("the ready line within 30 s").hasSizeGreaterThanOrEqualTo(2);
        String caLine = lines.get(0);
        String ready = lines.get(1);
        assertThat(caLine)
            .as("the CA's line comes before the ready line")
            .startsWith(ProxyPolicy.CA_LINE);
        Matcher matcher = READY.matcher(String.valueOf(ready));
        assertThat(matcher.find()).as(ready).isTrue();
        int port = Integer.parseInt(matcher.group(1));
        String pem = ProxyPolicy.caCertificate(caLine).orElseThrow();
        X509Certificate root =
            (X509Certificate)
                CertificateFactory.getInstance("X.509")
                    .generateCertificate(
                        new ByteArrayInputStream(pem.getBytes(StandardCharsets.US_ASCII)));
        assertThat(root.getBasicConstraints())
            .as("a CA certificate, nothing more")
            .isGreaterThanOrEqualTo(0);
        Path bundle = temp.resolve("run-ca.pem");
        Files.writeString(bundle, pem);

        String served =
            curl(port, bundle, "https://api.test:" + api.port() + "/repos/acme/widgets");
        assertThat(served).startsWith("hello from api at /repos/acme/widgets").endsWith("200");
        assertThat(api.seen().getLast().header("Authorization"))
            .isEqualTo("Bearer " + InspectWorld.TOKEN);
        String refused = curl(port, bundle, "https://api.test:" + api.port() + "/gists");
        assertThat(refused).endsWith("403");

        // A workload that asks the proxy's port for the CA's key gets a refusal, not a key.
        for (String path : List.of("/ca.key", "/", "/agent-sandbox/ca")) {
          String answer =
              Fixture.exchange(
                  new java.net.InetSocketAddress("127.0.0.1", port),
                  "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
          assertThat(answer).as(path).startsWith("HTTP/1.1 400").doesNotContain("PRIVATE");
        }
      } finally {
        process.destroy();
        assertThat(process.waitFor(20, TimeUnit.SECONDS)).isTrue();
      }
      String stdout = Files.readString(temp.resolve("stdout"));
      String stderr = Files.readString(temp.resolve("stderr"));
      List<JsonNode> decisions = new ArrayList<>();
      for (String line : stdout.split("\n")) {
        if (!line.isBlank()) {
          decisions.add(new ObjectMapper().readTree(line));
        }
      }
      assertThat(decisions)
          .anySatisfy(
              d -> {
                assertThat(d.path("path").asText()).isEqualTo("/repos/acme/widgets");
                assertThat(d.path("status").asInt()).isEqualTo(200);
                assertThat(d.path("credential").asText()).isEqualTo("github");
              })
          .anySatisfy(d -> assertThat(d.path("reason").asText()).isEqualTo("path-not-allowed"));
      String everything = stdout + "\n" + stderr;
      assertThat(everything).doesNotContain(InspectWorld.TOKEN).doesNotContain("PRIVATE KEY");
      try (var left = Files.list(work)) {
        assertThat(left.toList()).as("nothing written to the working folder").isEmpty();
      }
      try (var left = Files.walk(tmp)) {
        assertThat(left.filter(Files::isRegularFile).toList())
            .as("nothing written to the temporary folder")
            .isEmpty();
      }
      try (var left = Files.list(credentials)) {
        assertThat(left.map(p -> p.getFileName().toString()).toList()).containsExactly("github");
      }
    }
  }

  private static String curl(int proxyPort, Path bundle, String url) throws Exception {
    Process curl =
        new ProcessBuilder(
                Curl.path(),
                "-sS",
                "--max-time",
                "20",
                "--proxy",
                "http://127.0.0.1:" + proxyPort,
                "--cacert",
                bundle.toString(),
                "-w",
                "\\n%{http_code}",
                url)
            .redirectErrorStream(true)
            .start();
    assertThat(curl.waitFor(30, TimeUnit.SECONDS)).isTrue();
    return new String(curl.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
  }
}
