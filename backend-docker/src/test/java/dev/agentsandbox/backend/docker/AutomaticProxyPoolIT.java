package dev.agentsandbox.backend.docker;

import static dev.agentsandbox.backend.docker.DockerItSupport.SUITE;
import static dev.agentsandbox.backend.docker.DockerItSupport.cleanUpAndAssertNothingLeft;
import static dev.agentsandbox.testing.ItRuns.noEgress;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.testing.RecordingListener;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Issue 26 item 18, as a newcomer meets it: {@code serve}'s defaults (an automatic proxy pool,
 * sized from the daemon host's memory) keep proxies started before any run, say so in the probe's
 * detail ({@code serve}'s start line and {@code GET .../backends}), and the newcomer's first run is
 * built on one of them, not cold. What the pool buys in time is measured in docs/benchmarks.md, not
 * here.
 */
class AutomaticProxyPoolIT {
  private static DockerClient client;

  @BeforeAll
  static void daemon() {
    client = DockerItSupport.requireDaemon();
  }

  @AfterAll
  static void nothingLeft() {
    if (client != null) {
      cleanUpAndAssertNothingLeft(client);
    }
  }

  @Test
  void aNewcomersFirstRunOnTheDefaultsTakesAStartedProxy() throws Exception {
    long memory = client.infoCmd().exec().getMemTotal();
    assumeTrue(
        memory >= ProxyPoolSizing.ONE_FROM_GIB * (1L << 30),
        "a daemon host under 4 GiB keeps no automatic pool");
    int expected = ProxyPoolSizing.forHostMemory(memory);
    assertThat(expected).as("the standbys a host of %d bytes affords", memory).isPositive();
    DockerBackend backend =
        new DockerBackend(client, DockerBackendConfig.builder().automaticProxyPool().build());
    try {
      for (int i = 0; i < 1800 && backend.proxyPoolReady().size() < expected; i++) {
        Thread.sleep(100);
      }
      if (backend.proxyPoolReady().size() < expected) {
        fail("the automatic pool did not fill to " + expected + " standbys within 180 s");
      }
      assertThat(backend.probe().detail())
          .as("serve's start line for the backend")
          .contains("proxy pool: " + ProxyPoolSizing.explain(expected, memory));

      String runId = SUITE.newRunId();
      RecordingListener listener = new RecordingListener();
      try (Sandbox sandbox =
          backend.launch(
              SUITE.spec(
                  runId,
                  List.of("echo", "hello"),
                  noEgress(),
                  SUITE.smallCaps(),
                  Duration.ofMinutes(3)),
              listener,
              "runc")) {
        assertThat(sandbox.pooledProxy()).as("the first run, built on a started proxy").isPresent();
        Completion completion = sandbox.await(Instant.now().plus(Duration.ofMinutes(2)));
        assertThat(completion.end()).as(listener.output()).isEqualTo(Completion.End.EXIT);
        assertThat(listener.output()).contains("hello");
      }
    } finally {
      backend.close();
    }
  }
}
