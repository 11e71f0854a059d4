package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A refusal reaches a client that sends a large body before it reads: an absolute-form {@code POST}
 * of 5 MiB through the proxy to a refused destination, {@value #ROUNDS} times per client. Python's
 * urllib writes its whole body first, so a proxy that answers and closes at once resets the
 * connection and urllib reports "Connection reset by peer" instead of the 403; curl reads while it
 * sends. Each row also checks that nothing reached the trap upstream.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EarlyRefusalIT {
  static final int ROUNDS = 10;
  private static final int SIZE = 5 * 1024 * 1024;

  private static final String URLLIB =
      """
      import sys, urllib.request, urllib.error
      proxy, url, size, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
      opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy}))
      body = b"x" * size
      for _ in range(rounds):
          request = urllib.request.Request(url, data=body, method="POST",
                                           headers={"Content-Type": "application/octet-stream"})
          try:
              with opener.open(request, timeout=30) as answer:
                  print(answer.status)
          except urllib.error.HTTPError as e:
              print(e.code)
          except Exception as e:
              print("error", type(e).__name__, e)
      """;

  private Fixture fixture;
  private RecordingResolver resolver;
  private ProxyServer proxy;
  @TempDir Path temp;

  @BeforeAll
  void start() throws Exception {
    fixture = new Fixture();
    resolver = new RecordingResolver(new StaticHostResolver(fixture.hosts));
    proxy =
        ProxyServer.start(
            fixture.config(Limits.DEFAULTS),
            resolver,
            List.of(new RecordingListener()),
            new ProxyMetrics());
  }

  @AfterAll
  void stop() {
    proxy.close();
    fixture.close();
  }

  Stream<Arguments> rows() {
    List<Arguments> rows = new ArrayList<>();
    for (String client : List.of("urllib", "curl")) {
      rows.add(Arguments.of(client, "a name not on the allow-list", "not-allowed.test"));
      rows.add(
          Arguments.of(
              client,
              "an allowed name resolving to a refused address",
              "evil.test:" + fixture.port));
    }
    return rows.stream();
  }

  @ParameterizedTest(name = "{0}: 403 for a 5 MiB POST to {1}")
  @MethodSource("rows")
  void theClientReadsTheRefusal(String client, String what, String target) throws Exception {
    String url = "http://" + target + "/upload";
    String proxyUrl = "http://127.0.0.1:" + proxy.boundAddress().getPort();
    List<String> statuses = client.equals("urllib") ? urllib(proxyUrl, url) : curl(proxyUrl, url);
    assertThat(statuses).as(what).hasSize(ROUNDS).containsOnly("403");
    assertThat(fixture.trap.seen()).as("requests at the trap").isEmpty();
    assertThat(resolver.lookups()).doesNotContain("not-allowed.test");
  }

  private List<String> urllib(String proxyUrl, String url) throws Exception {
    return run(
        List.of(
            "python3", "-c", URLLIB, proxyUrl, url, String.valueOf(SIZE), String.valueOf(ROUNDS)));
  }

  private List<String> curl(String proxyUrl, String url) throws Exception {
    Path body = temp.resolve("body");
    if (!Files.exists(body)) {
      Files.write(body, new byte[SIZE]);
    }
    List<String> statuses = new ArrayList<>();
    for (int i = 0; i < ROUNDS; i++) {
      statuses.addAll(
          run(
              List.of(
                  "curl",
                  "-sS",
                  "-o",
                  "/dev/null",
                  "-w",
                  "%{http_code}\\n",
                  "--max-time",
                  "30",
                  "-x",
                  proxyUrl,
                  "--data-binary",
                  "@" + body,
                  url)));
    }
    return statuses;
  }

  private static List<String> run(List<String> command) throws IOException, InterruptedException {
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    String output;
    try (var in = process.getInputStream()) {
      output = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    if (!process.waitFor(120, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new AssertionError(command.get(0) + " did not finish within 120 s");
    }
    return output.lines().map(String::strip).filter(line -> !line.isEmpty()).toList();
  }
}
