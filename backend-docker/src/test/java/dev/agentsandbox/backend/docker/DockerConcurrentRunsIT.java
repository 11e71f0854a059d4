package dev.agentsandbox.backend.docker;

import static dev.agentsandbox.backend.docker.DockerItSupport.SUITE;
import static dev.agentsandbox.backend.docker.DockerItSupport.cleanUpAndAssertNothingLeft;
import static dev.agentsandbox.testing.ItRuns.noEgress;
import static org.assertj.core.api.Assertions.assertThat;

import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.policy.config.Resources;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Issue 26 item 17: on {@code serve}'s defaults (an automatic subnet pool sized for the run limit,
 * an automatic proxy pool) more runs than the control plane's default run limit run at once.
 * Docker's default address pools held 15 runs' networks, so the 16th failed. Bounded: the runs
 * sleep, are all alive at once, and are killed; every launch has one shared deadline; everything is
 * removed.
 */
class DockerConcurrentRunsIT {
  /**
   * The run service's default limit (as many runs as a default control plane admits at once) and
   * four more: the range is sized with room beyond the limit.
   */
  private static final int RUNS = DockerBackendConfig.DEFAULT_CONCURRENT_RUNS + 4;

  /** All launches together, on this project's 2 shared cores. */
  private static final Duration LAUNCHES = Duration.ofMinutes(10);

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
  void theDefaultRunLimitRunsAtOnceOnTheDefaults() throws Exception {
    DockerBackendConfig serveDefaults =
        DockerBackendConfig.builder()
            .automaticProxyPool()
            // 20 JVMs starting at once on this project's 2 cores: time enough, as under load.
            .proxyReadyTimeout(Duration.ofMinutes(3))
            .build();
    DockerBackend backend = new DockerBackend(client, serveDefaults);
    Map<String, Sandbox> live = new ConcurrentHashMap<>();
    List<String> failures = new ArrayList<>();
    ExecutorService launching = Executors.newFixedThreadPool(RUNS);
    try {
      List<Future<Sandbox>> launched = new ArrayList<>();
      for (int i = 0; i < RUNS; i++) {
        String runId = SUITE.newRunId();
        launched.add(
            launching.submit(
                () -> {
                  Sandbox sandbox =
                      backend.launch(
                          SUITE.spec(
                              runId,
                              List.of("sleep", "600"),
                              noEgress(),
                              new Resources(0.5, 64, 32),
                              Duration.ofMinutes(10)),
                          new dev.agentsandbox.testing.RecordingListener(),
                          "runc");
                  live.put(runId, sandbox);
                  return sandbox;
                }));
      }
      Instant deadline = Instant.now().plus(LAUNCHES);
      for (Future<Sandbox> future : launched) {
        try {
          future.get(
              Math.max(0, Duration.between(Instant.now(), deadline).toMillis()),
              TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
          failures.add(String.valueOf(e.getCause().getMessage()));
        } catch (java.util.concurrent.TimeoutException e) {
          failures.add("not launched within " + LAUNCHES + " of the first");
        }
      }
      assertThat(failures).as("launches that failed of %d at once", RUNS).isEmpty();
      assertThat(live).hasSize(RUNS);
      for (Sandbox sandbox : live.values()) {
        assertThat(
                client
                    .inspectContainerCmd(((DockerSandbox) sandbox).workloadContainerId())
                    .exec()
                    .getState()
                    .getRunning())
            .as("run %s alive while all %d are", sandbox.runId(), RUNS)
            .isTrue();
      }
      assertThat(backend.subnetPool().range().prefixLength())
          .as("the automatic range, sized for the run limit and the pool")
          .isEqualTo(AutomaticSubnets.prefixFor(DockerBackendConfig.DEFAULT_CONCURRENT_RUNS, 2));
    } finally {
      launching.shutdownNow();
      for (Sandbox sandbox : live.values()) {
        sandbox.kill();
        Completion end = sandbox.await(Instant.now().plus(Duration.ofMinutes(1)));
        assertThat(end.end()).isEqualTo(Completion.End.KILLED);
        sandbox.teardown();
      }
      backend.close();
    }
    assertThat(backend.subnetsHeld()).as("every block given back").isZero();
  }
}
