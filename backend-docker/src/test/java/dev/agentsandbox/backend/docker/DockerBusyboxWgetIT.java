package dev.agentsandbox.backend.docker;

import static dev.agentsandbox.backend.docker.DockerItSupport.SUITE;
import static dev.agentsandbox.backend.docker.DockerItSupport.cleanUpAndAssertNothingLeft;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.RunEgress;
import dev.agentsandbox.testing.Host;
import dev.agentsandbox.testing.HostDrill;
import dev.agentsandbox.testing.RecordingListener;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * busybox wget through the run's proxy, {@value #ROUNDS} times in a row per runtime, to an allowed
 * host and to a refused one: every attempt gets its answer and every refusal is a recorded
 * decision. busybox reads the answer with stdio, i.e. a blocking read(2) right after it sent the
 * request; under runsc with {@code --network=host} that read returns EAGAIN while the answer is
 * still on its way ("error getting response: Resource temporarily unavailable"), which is why
 * scripts/install-host.sh registers runsc with its own network stack (docs/backends/docker.md).
 */
class DockerBusyboxWgetIT {
  static final int ROUNDS = 20;
  private static final String REFUSED = "refused.test";
  private static final String ALLOWED_BODY = "hello from upstream";
  private static final String REFUSED_ANSWER = "server returned error: HTTP/1.1 403 Forbidden";

  private static DockerClient client;
  private static HostDrill drill;

  @BeforeAll
  static void standUp() throws Exception {
    client = DockerItSupport.requireDaemon();
    assumeTrue(Host.canAddLinks(), "the upstream lives on a dummy interface: needs root and ip");
    drill = DockerItSupport.startDrill();
  }

  @AfterAll
  static void tearDown() throws Exception {
    if (drill != null) {
      drill.close();
    }
    if (client != null) {
      cleanUpAndAssertNothingLeft(client);
    }
  }

  static List<String> runtimes() {
    return DockerItSupport.runtimes();
  }

  @ParameterizedTest(name = "busybox wget 20 times to an allowed and a refused host under {0}")
  @MethodSource("runtimes")
  void everyAttemptGetsTheProxysAnswer(String runtime) throws Exception {
    int port = drill.upstreamPort();
    RunEgress egress =
        new RunEgress(
            AllowList.parse(List.of("upstream.test:" + port)),
            Optional.empty(),
            List.of(
                dev.agentsandbox.policy.config.InternalDestination.range(
                    "upstream", drill.upstreamCidr(), port)),
            Map.of("upstream.test", List.of(drill.upstreamAddress())));
    String script =
        "i=0; while [ $i -lt "
            + ROUNDS
            + " ]; do i=$((i+1));"
            + " wget -O- http://upstream.test:"
            + port
            + "/ 2>&1; echo;"
            + " wget -O- http://"
            + REFUSED
            + "/ 2>&1; done";
    RecordingListener listener = new RecordingListener();
    DockerBackend backend = new DockerBackend(client, DockerBackendConfig.defaults());
    try (Sandbox sandbox =
        backend.launch(
            SUITE.spec(
                SUITE.newRunId(),
                List.of("sh", "-c", script),
                egress,
                SUITE.smallCaps(),
                Duration.ofMinutes(5)),
            listener,
            runtime)) {
      Completion completion = sandbox.await(Instant.now().plus(Duration.ofMinutes(4)));
      String output = listener.output();
      assertThat(completion.end()).as(output).isEqualTo(Completion.End.EXIT);
      assertThat(output).doesNotContain("Resource temporarily unavailable");
      assertThat(count(output, ALLOWED_BODY)).as(output).isEqualTo(ROUNDS);
      assertThat(count(output, REFUSED_ANSWER)).as(output).isEqualTo(ROUNDS);
      assertThat(
              listener.decisions.stream()
                  .filter(d -> d.contains("\"host\":\"" + REFUSED + "\""))
                  .filter(d -> d.contains("\"decision\":\"deny\""))
                  .count())
          .as("deny decisions recorded for %s: %s", REFUSED, listener.decisions)
          .isEqualTo(ROUNDS);
    }
  }

  private static int count(String text, String needle) {
    Matcher matcher = Pattern.compile(Pattern.quote(needle)).matcher(text);
    int found = 0;
    while (matcher.find()) {
      found++;
    }
    return found;
  }
}
