package dev.agentsandbox.backend.docker;

import static dev.agentsandbox.backend.docker.DockerItSupport.SUITE;
import static dev.agentsandbox.backend.docker.DockerItSupport.cleanUpAndAssertNothingLeft;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.model.Capability;
import com.github.dockerjava.api.model.HostConfig;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.InternalDestination;
import dev.agentsandbox.policy.config.RunEgress;
import dev.agentsandbox.testing.Host;
import dev.agentsandbox.testing.HostDrill;
import dev.agentsandbox.testing.ItRuns;
import dev.agentsandbox.testing.RecordingListener;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The proxy pool on a real daemon with the real proxy image: a standby's proxy refuses everything
 * before its policy (seen from inside its fence network), runs served from the pool reach their own
 * allowed host and are refused another run's, the pool refills, concurrent launches never share a
 * standby, the reaper spares pooled standbys and removes expired and unknown ones, close leaves
 * nothing labelled, and an empty pool means a cold run. Runs use runc (the pool holds proxies,
 * which always run under runc; the workload's runtime does not matter to it).
 */
class ProxyPoolIT {
  private static final String MINE = "upstream.test";
  private static final String THEIRS = "theirs.test";

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

  private static DockerBackend pooled(int size) {
    return new DockerBackend(
        client, DockerBackendConfig.defaults().toBuilder().proxyPoolSize(size).build());
  }

  /** Both names map to the drill's upstream; {@code allowed} is the only one on the allow-list. */
  private static RunEgress egressTo(String allowed) {
    int port = drill.upstreamPort();
    return new RunEgress(
        AllowList.parse(List.of(allowed + ":" + port)),
        Optional.empty(),
        List.of(InternalDestination.range("upstream", drill.upstreamCidr(), port)),
        Map.of(MINE, List.of(drill.upstreamAddress()), THEIRS, List.of(drill.upstreamAddress())));
  }

  private static String curlBoth() {
    int port = drill.upstreamPort();
    return "for h in "
        + MINE
        + " "
        + THEIRS
        + "; do echo \"== $h\"; curl -sS -i --max-time 10 http://$h:"
        + port
        + "/ 2>&1; echo; done";
  }

  @Test
  void aStandbysProxyRefusesEverythingBeforeItsPolicyFromInsideItsFence() throws Exception {
    DockerBackend backend = pooled(1);
    ProxyStandby standby = null;
    String probe = null;
    try {
      awaitReady(backend, 1);
      standby = backend.takeStandbyForTest("itprobe").orElseThrow();
      Map<String, String> labels =
          client.inspectContainerCmd(standby.proxyId()).exec().getConfig().getLabels();
      assertThat(labels)
          .containsEntry(Labels.RUN_ID, standby.id())
          .containsEntry(Labels.AGENT, ProxyStandby.AGENT_LABEL)
          .containsEntry(Labels.MANAGED_BY, Labels.MANAGER)
          .containsKey(Labels.EXPIRES_AT);
      assertThat(standby.id()).startsWith(ProxyPool.ID_PREFIX);

      // A client on the standby's fence network, where a run's workload would be.
      probe =
          client
              .createContainerCmd(DockerItSupport.WORKLOAD_IMAGE)
              .withName("asb-" + SUITE.newRunId() + "-probe")
              .withCmd("sleep", "300")
              .withUser("65534:65534")
              .withLabels(
                  Labels.forRun(
                      SUITE.newRunId(), "it-agent", Instant.now().plus(Duration.ofMinutes(30))))
              .withHostConfig(
                  HostConfig.newHostConfig()
                      .withRuntime("runc")
                      .withNetworkMode(FenceLayout.fenceName(standby.id()))
                      .withCapDrop(Capability.ALL)
                      .withReadonlyRootfs(true)
                      .withTmpFs(Map.of("/tmp", "rw,size=16m")))
              .exec()
              .getId();
      client.startContainerCmd(probe).exec();
      String proxy = "http://" + standby.proxyAddress() + ":3128";
      int port = drill.upstreamPort();
      String plain =
          DockerItSupport.exec(
                  client,
                  probe,
                  "curl -sS -i --max-time 10 -x " + proxy + " http://" + MINE + ":" + port + "/")
              .output();
      assertThat(plain)
          .startsWith("HTTP/1.1 403")
          .containsIgnoringCase("X-Agent-Sandbox-Denied: policy-pending")
          .doesNotContain("hello from upstream");
      String literal =
          DockerItSupport.exec(
                  client,
                  probe,
                  "curl -sS -i --max-time 10 -x "
                      + proxy
                      + " http://"
                      + drill.upstreamAddress()
                      + ":"
                      + port
                      + "/")
              .output();
      assertThat(literal)
          .containsIgnoringCase("X-Agent-Sandbox-Denied: policy-pending")
          .doesNotContain("hello from upstream");
      String tunnel =
          DockerItSupport.exec(
                  client,
                  probe,
                  "curl -sS -i --max-time 10 -p -x "
                      + proxy
                      + " http://"
                      + MINE
                      + ":"
                      + port
                      + "/ 2>&1")
              .output();
      assertThat(tunnel).contains("403").doesNotContain("hello from upstream");
      assertThat(standby.usable()).as("still awaiting a policy").isTrue();
      RecordingListener decisions = new RecordingListener();
      standby.listener().handOver(decisions);
      await(() -> decisions.decisions.size() >= 3, "three decisions");
      assertThat(decisions.decisions)
          .hasSize(3)
          .allMatch(d -> d.contains("\"reason\":\"policy-pending\""));
    } finally {
      if (probe != null) {
        client.removeContainerCmd(probe).withForce(true).exec();
      }
      if (standby != null) {
        standby.destroy();
      }
      backend.close();
    }
    assertNothingOfTheStandbysLeft(List.of(standby.id()));
  }

  @Test
  void runsFromThePoolGetTheirOwnPolicyAndThePoolRefills() throws Exception {
    DockerBackend backend = pooled(2);
    List<String> standbys = new ArrayList<>();
    try {
      awaitReady(backend, 2);
      standbys.addAll(backend.proxyPoolReady());
      RecordingListener mine = new RecordingListener();
      RecordingListener theirs = new RecordingListener();
      String mineId = SUITE.newRunId();
      String theirsId = SUITE.newRunId();
      try (Sandbox a =
              backend.launch(
                  SUITE.spec(
                      mineId,
                      List.of("sh", "-c", curlBoth()),
                      egressTo(MINE),
                      SUITE.smallCaps(),
                      Duration.ofMinutes(5)),
                  mine,
                  "runc");
          Sandbox b =
              backend.launch(
                  SUITE.spec(
                      theirsId,
                      List.of("sh", "-c", curlBoth()),
                      egressTo(THEIRS),
                      SUITE.smallCaps(),
                      Duration.ofMinutes(5)),
                  theirs,
                  "runc")) {
        assertThat(a.pooledProxy()).isPresent();
        assertThat(b.pooledProxy()).isPresent();
        assertThat(List.of(a.pooledProxy().get(), b.pooledProxy().get()))
            .containsExactlyInAnyOrderElementsOf(standbys);
        Completion ca = a.await(Instant.now().plus(Duration.ofMinutes(2)));
        Completion cb = b.await(Instant.now().plus(Duration.ofMinutes(2)));
        assertThat(ca.end()).as(mine.output()).isEqualTo(Completion.End.EXIT);
        assertThat(cb.end()).as(theirs.output()).isEqualTo(Completion.End.EXIT);
        assertThat(section(mine.output(), MINE)).contains("hello from upstream");
        assertThat(section(mine.output(), THEIRS))
            .contains("403")
            .containsIgnoringCase("X-Agent-Sandbox-Denied: not-allowed");
        assertThat(section(theirs.output(), THEIRS)).contains("hello from upstream");
        assertThat(section(theirs.output(), MINE))
            .contains("403")
            .containsIgnoringCase("X-Agent-Sandbox-Denied: not-allowed");
        assertThat(mine.decisions)
            .isNotEmpty()
            .allMatch(d -> d.contains("\"run_id\":\"" + mineId + "\""))
            .noneMatch(d -> d.contains("policy-pending"));
        assertThat(theirs.decisions)
            .isNotEmpty()
            .allMatch(d -> d.contains("\"run_id\":\"" + theirsId + "\""));
        assertThat(backend.proxyPoolCounts()).containsEntry("taken", 2L);
      }
      assertNothingOfTheStandbysLeft(standbys);
      // Refilled in the background with new standbys.
      awaitReady(backend, 2);
      assertThat(backend.proxyPoolReady()).doesNotContainAnyElementsOf(standbys);
      standbys.addAll(backend.proxyPoolReady());
      assertThat(backend.proxyPoolCounts().get("created")).isGreaterThanOrEqualTo(4L);
    } finally {
      backend.close();
    }
    assertNothingOfTheStandbysLeft(standbys);
  }

  @Test
  void concurrentLaunchesNeverShareAStandby() throws Exception {
    DockerBackend backend = pooled(2);
    int runs = 4;
    ExecutorService threads = Executors.newFixedThreadPool(runs);
    List<String> used = new ArrayList<>();
    try {
      awaitReady(backend, 2);
      CountDownLatch go = new CountDownLatch(1);
      List<Future<String>> results = new ArrayList<>();
      for (int i = 0; i < runs; i++) {
        results.add(
            threads.submit(
                () -> {
                  String id = SUITE.newRunId();
                  RecordingListener listener = new RecordingListener();
                  go.await();
                  try (Sandbox sandbox =
                      backend.launch(
                          SUITE.spec(
                              id,
                              List.of("sh", "-c", "echo run=$AGENT_SANDBOX_RUN_ID"),
                              ItRuns.noEgress(),
                              SUITE.smallCaps(),
                              Duration.ofMinutes(5)),
                          listener,
                          "runc")) {
                    Completion done = sandbox.await(Instant.now().plus(Duration.ofMinutes(3)));
                    assertThat(done.end()).isEqualTo(Completion.End.EXIT);
                    assertThat(listener.output()).contains("run=" + id);
                    return sandbox.pooledProxy().orElse("cold");
                  }
                }));
      }
      go.countDown();
      for (Future<String> result : results) {
        used.add(result.get(5, TimeUnit.MINUTES));
      }
    } finally {
      threads.shutdownNow();
      backend.close();
    }
    List<String> pooled = used.stream().filter(s -> !s.equals("cold")).toList();
    assertThat(pooled).as("standbys used: %s", used).isNotEmpty().doesNotHaveDuplicates();
    assertNothingOfTheStandbysLeft(pooled);
  }

  @Test
  void theReaperSparesPooledStandbysAndRemovesThoseItDoesNotHold() throws Exception {
    DockerBackend backend = pooled(1);
    DockerBackend restarted = pooled(0);
    List<String> seen = new ArrayList<>();
    try {
      awaitReady(backend, 1);
      String first = backend.proxyPoolReady().get(0);
      seen.add(first);
      // Live runs: none of the tests'; a standby in the pool is spared all the same.
      backend.reap(Instant.now(), id -> !id.startsWith("it"));
      assertThat(objectsOf(first)).hasSize(5);
      assertThat(backend.proxyPoolReady()).containsExactly(first);

      // A control plane that does not hold it (this one after a crash) removes it at once.
      restarted.reap(Instant.now(), id -> true);
      assertThat(objectsOf(first)).isEmpty();
      // The pool notices its standby is gone and replaces it.
      await(
          () -> !backend.proxyPoolReady().isEmpty() && !backend.proxyPoolReady().contains(first),
          "a replacement for the reaped standby");
      seen.add(backend.proxyPoolReady().get(0));
    } finally {
      backend.close();
      restarted.close();
    }
    assertNothingOfTheStandbysLeft(seen);
  }

  @Test
  void pastItsExpiryLabelAPooledStandbyIsReapedAllTheSame() throws Exception {
    // Labels that expire as soon as they are written (real time: nothing else's expiry moves).
    DockerBackend backend =
        new DockerBackend(
            client,
            DockerBackendConfig.defaults().toBuilder().proxyPoolSize(1).build(),
            DockerBackend.PROXY_POOL_MAX_IDLE,
            Duration.ZERO);
    List<String> seen = new ArrayList<>();
    try {
      awaitReady(backend, 1);
      String standby = backend.proxyPoolReady().get(0);
      seen.add(standby);
      assertThat(objectsOf(standby)).hasSize(5);
      backend.reap(Instant.now(), id -> !id.startsWith("it"));
      assertThat(objectsOf(standby)).isEmpty();
    } finally {
      backend.close();
    }
    assertNothingOfTheStandbysLeft(seen);
  }

  @Test
  void standbysIdleTooLongAreReplaced() throws Exception {
    DockerBackend backend =
        new DockerBackend(
            client,
            DockerBackendConfig.defaults().toBuilder().proxyPoolSize(1).build(),
            Duration.ofSeconds(3),
            DockerBackend.standbyLabelLifetime(Duration.ofSeconds(3)));
    List<String> seen = new ArrayList<>();
    try {
      awaitReady(backend, 1);
      String first = backend.proxyPoolReady().get(0);
      seen.add(first);
      await(
          () -> !backend.proxyPoolReady().isEmpty() && !backend.proxyPoolReady().contains(first),
          "a replacement for the idle standby");
      seen.addAll(backend.proxyPoolReady());
      assertThat(objectsOf(first)).isEmpty();
      assertThat(backend.proxyPoolCounts().get("expired")).isGreaterThanOrEqualTo(1L);
    } finally {
      backend.close();
    }
    assertNothingOfTheStandbysLeft(seen);
  }

  @Test
  void closeLeavesNothingAndAnEmptyPoolMeansAColdRun() throws Exception {
    DockerBackend backend = pooled(2);
    List<String> seen = new ArrayList<>();
    awaitReady(backend, 2);
    seen.addAll(backend.proxyPoolReady());
    backend.close();
    assertThat(backend.proxyPoolReady()).isEmpty();
    assertNothingOfTheStandbysLeft(seen);

    RecordingListener listener = new RecordingListener();
    String id = SUITE.newRunId();
    try (Sandbox sandbox =
        backend.launch(
            SUITE.spec(
                id,
                List.of("sh", "-c", curlBoth()),
                egressTo(MINE),
                SUITE.smallCaps(),
                Duration.ofMinutes(5)),
            listener,
            "runc")) {
      assertThat(sandbox.pooledProxy()).isEmpty();
      assertThat(
              client
                  .inspectContainerCmd(((DockerSandbox) sandbox).proxyContainerId())
                  .exec()
                  .getName())
          .isEqualTo("/asb-" + id + "-proxy");
      assertThat(sandbox.await(Instant.now().plus(Duration.ofMinutes(2))).end())
          .isEqualTo(Completion.End.EXIT);
      assertThat(section(listener.output(), MINE)).contains("hello from upstream");
      assertThat(section(listener.output(), THEIRS)).contains("403");
    }
  }

  /** The part of the output after {@code == host} and before the next marker. */
  private static String section(String output, String host) {
    int start = output.indexOf("== " + host);
    assertThat(start).as(output).isNotNegative();
    int end = output.indexOf("== ", start + 3);
    return end < 0 ? output.substring(start) : output.substring(start, end);
  }

  private static void awaitReady(DockerBackend backend, int count) throws InterruptedException {
    await(() -> backend.proxyPoolReady().size() >= count, count + " standbys ready");
  }

  private static void await(BooleanSupplier condition, String what) throws InterruptedException {
    for (int i = 0; i < 1200; i++) {
      if (condition.getAsBoolean()) {
        return;
      }
      Thread.sleep(100);
    }
    fail("no " + what + " within 120 s");
  }

  /** Names of every container, network and volume labelled with {@code standbyId}. */
  private static List<String> objectsOf(String standbyId) {
    String label = Labels.RUN_ID + "=" + standbyId;
    List<String> found = new ArrayList<>();
    client
        .listContainersCmd()
        .withShowAll(true)
        .withLabelFilter(Map.of(Labels.RUN_ID, standbyId))
        .exec()
        .forEach(c -> found.add("container " + String.join(",", c.getNames())));
    client
        .listNetworksCmd()
        .withFilter("label", List.of(label))
        .exec()
        .forEach(n -> found.add("network " + n.getName()));
    var volumes = client.listVolumesCmd().withFilter("label", List.of(label)).exec().getVolumes();
    if (volumes != null) {
      volumes.forEach(v -> found.add("volume " + v.getName()));
    }
    return found;
  }

  private static void assertNothingOfTheStandbysLeft(List<String> standbys) {
    for (String standby : standbys) {
      assertThat(objectsOf(standby)).as("left of standby %s", standby).isEmpty();
    }
  }
}
