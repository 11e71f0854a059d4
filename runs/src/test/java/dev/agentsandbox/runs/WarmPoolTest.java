package dev.agentsandbox.runs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.backend.BackendSelector;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.AgentGrant;
import dev.agentsandbox.policy.config.AgentSettings;
import dev.agentsandbox.policy.config.Backend;
import dev.agentsandbox.policy.config.EgressPolicy;
import dev.agentsandbox.policy.config.OutputLimits;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.SandboxConfig;
import dev.agentsandbox.policy.event.EventType;
import dev.agentsandbox.runs.InMemoryBackend.Script;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.AuditRow;
import dev.agentsandbox.store.RunStatus;
import dev.agentsandbox.store.Store;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The warm pool's invariants against the in-memory backend and real SQLite, each tried the way it
 * could break: one warm sandbox for two concurrent runs, a run after a tightening on the old
 * policy, a sandbox idling forever, a pool that takes every slot unseen, leftovers at shutdown.
 */
class WarmPoolTest {
  private static final Duration WAIT = Duration.ofSeconds(5);
  private static final String AGENT = "helper";
  private static final String ACTOR = "admin";

  @TempDir Path temp;

  private final ObjectMapper json = new ObjectMapper();
  private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
  private final AtomicReference<Instant> now = new AtomicReference<>(Instant.now());
  private final Clock clock =
      new Clock() {
        @Override
        public java.time.ZoneId getZone() {
          return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(java.time.ZoneId zone) {
          return this;
        }

        @Override
        public Instant instant() {
          return now.get();
        }
      };
  private Store store;
  private InMemoryBackend backend;
  private volatile SandboxConfig config;

  @BeforeEach
  void open() {
    store = Store.open("jdbc:sqlite:" + temp.resolve("store.db"));
    backend =
        new InMemoryBackend("docker", Isolation.CONTAINER, Clock.systemUTC())
            .script("ok", Script.exits(0, "hello\n"))
            .script("hangs", Script.runsUntilStopped());
    config = config(2, "api.vendor.com", "evil.example");
  }

  @AfterEach
  void close() {
    executor.shutdownNow();
    store.close();
  }

  private static SandboxConfig config(int warm, String... allow) {
    TreeMap<String, AgentSettings> agents = new TreeMap<>();
    agents.put(
        AGENT,
        new AgentSettings(
            AllowList.parse(List.of(allow)),
            AgentSettings.DEFAULT_IMAGE,
            AGENT,
            60,
            Resources.DEFAULT,
            new TreeMap<>(),
            OutputLimits.DEFAULT,
            new TreeMap<>(),
            warm));
    agents.put(
        "other",
        new AgentSettings(
            AllowList.parse(List.of("api.vendor.com")),
            AgentSettings.DEFAULT_IMAGE,
            "other",
            60,
            Resources.DEFAULT));
    return new SandboxConfig(true, Backend.AUTO, false, agents);
  }

  private RunService service(int maxConcurrentRuns) {
    ConfigSource configs =
        new ConfigSource() {
          @Override
          public SandboxConfig sandbox() {
            return config;
          }

          @Override
          public EgressPolicy egress() {
            return EgressPolicy.DEFAULT;
          }
        };
    return new RunService(
        configs,
        new BackendSelector(List.of(backend)),
        store,
        OperatorEgress.NONE,
        new RunSettings(
            "cp-1",
            RunSettings.DEFAULT_TAIL_BYTES,
            100,
            maxConcurrentRuns,
            16,
            Duration.ofMinutes(1)),
        clock,
        executor,
        json,
        RunContractServices.Config.NONE.services(store));
  }

  private static RunRequest request(String... command) {
    return new RunRequest(AGENT, List.of(command), Map.of());
  }

  private AuditRow launchRow(String runId) {
    return store
        .audit()
        .query(new AuditQuery(EventType.LAUNCH.wireName(), null, runId, null, null, 10))
        .get(0);
  }

  private static void awaitReady(RunService service, int ready) {
    await()
        .atMost(WAIT)
        .until(
            () ->
                service.warmSandboxes().getOrDefault(AGENT, Map.of()).getOrDefault("ready", 0)
                    == ready);
  }

  private RunService filled(int maxConcurrentRuns, int ready) {
    RunService service = service(maxConcurrentRuns);
    service.maintainWarmPool();
    awaitReady(service, ready);
    return service;
  }

  @Test
  void aRunTakesAPreparedSandboxAndTheAuditSaysSo() throws Exception {
    RunService service = filled(8, 2);
    Set<String> prepared = backend.prepared().keySet();

    RunView view = service.run(ACTOR, AgentGrant.EVERY, request("ok"));

    String runId = view.record().runId();
    assertThat(view.record().status()).isEqualTo(RunStatus.EXITED);
    assertThat(view.outputTail()).isEqualTo("hello\n");
    assertThat(prepared).contains(runId);
    assertThat(backend.launched(runId).command()).containsExactly("ok");
    assertThat(launchRow(runId).data().get("warm").asBoolean()).isTrue();
    assertThat(launchRow(runId).data().get("warm_prepared_at").asText()).isNotEmpty();
    // Used once, then destroyed like any run's sandbox (after the run's result is answered).
    await().atMost(Duration.ofSeconds(5)).until(() -> backend.teardowns(runId) == 1);
    assertThat(backend.resources()).doesNotContain(runId);
    assertThat(service.warmOutcomes()).containsEntry("handed_over", 1L);
  }

  @Test
  void aWarmSandboxIsNeverHandedToASecondRunUnderConcurrentRequests() throws Exception {
    RunService service = filled(64, 2);
    int requests = 24;
    CountDownLatch gate = new CountDownLatch(1);
    List<Future<String>> answers = new ArrayList<>();
    try (ExecutorService callers = Executors.newVirtualThreadPerTaskExecutor()) {
      for (int i = 0; i < requests; i++) {
        answers.add(
            callers.submit(
                () -> {
                  gate.await();
                  return service.start(ACTOR, AgentGrant.EVERY, request("hangs"));
                }));
      }
      gate.countDown();
      Set<String> runIds = new HashSet<>();
      for (Future<String> answer : answers) {
        runIds.add(answer.get(WAIT.toMillis(), TimeUnit.MILLISECONDS));
      }
      assertThat(runIds).hasSize(requests);
      int warm = 0;
      for (String runId : runIds) {
        if (launchRow(runId).data().get("warm").asBoolean()) {
          warm++;
          assertThat(backend.prepared()).containsKey(runId);
        }
        assertThat(backend.awaitStarted(runId, WAIT)).isTrue();
      }
      assertThat(warm).isGreaterThanOrEqualTo(1);
      // No prepared sandbox was ever handed over twice, not even attempted.
      for (String prepared : backend.prepared().keySet()) {
        assertThat(backend.handOvers(prepared)).as(prepared).isLessThanOrEqualTo(1);
      }
      for (String runId : runIds) {
        service.kill(ACTOR, runId);
      }
    }
  }

  @Test
  void aTighteningDrainsThePoolBeforeAnyRunUsesTheOldPolicy() throws Exception {
    RunService service = filled(8, 2);
    Set<String> oldPolicy = Set.copyOf(backend.prepared().keySet());

    // Tightened, and no maintenance pass has run since: the next run must not get the old policy.
    config = config(2, "api.vendor.com");
    RunView view = service.run(ACTOR, AgentGrant.EVERY, request("ok"));

    String runId = view.record().runId();
    RunSpec ran = backend.launched(runId);
    assertThat(ran.egress().effective().asStrings()).containsExactly("api.vendor.com");
    assertThat(oldPolicy).doesNotContain(runId);
    assertThat(launchRow(runId).data().get("warm").asBoolean()).isFalse();
    await().atMost(WAIT).until(() -> backend.resources().stream().noneMatch(oldPolicy::contains));
    assertThat(service.warmOutcomes().get("drained")).isEqualTo(2L);

    // The pool refills under the new policy, and the next run is warm again.
    service.maintainWarmPool();
    awaitReady(service, 2);
    String next = service.run(ACTOR, AgentGrant.EVERY, request("ok")).record().runId();
    assertThat(launchRow(next).data().get("warm").asBoolean()).isTrue();
    assertThat(backend.launched(next).egress().effective().asStrings())
        .containsExactly("api.vendor.com");
  }

  @Test
  void aMaintenancePassDrainsAChangedAgentWithoutWaitingForARun() {
    RunService service = filled(8, 2);
    Set<String> oldPolicy = Set.copyOf(backend.prepared().keySet());

    config = config(0, "api.vendor.com", "evil.example");
    service.maintainWarmPool();

    await().atMost(WAIT).until(() -> backend.resources().isEmpty());
    assertThat(backend.resources()).doesNotContainAnyElementsOf(oldPolicy);
    assertThat(service.liveCount()).isZero();
  }

  @Test
  void warmSandboxesExpireAfterTheMaximumIdleTime() throws Exception {
    RunService service = filled(8, 2);
    Set<String> stale = Set.copyOf(backend.prepared().keySet());

    now.set(now.get().plus(Duration.ofMinutes(2)));
    // Taken before any maintenance pass: an expired sandbox is not handed over.
    String runId = service.run(ACTOR, AgentGrant.EVERY, request("ok")).record().runId();
    assertThat(stale).doesNotContain(runId);
    assertThat(launchRow(runId).data().get("warm").asBoolean()).isFalse();
    await().atMost(WAIT).until(() -> backend.resources().stream().noneMatch(stale::contains));
    assertThat(service.warmOutcomes().get("expired")).isEqualTo(2L);
  }

  @Test
  void thePoolCountsAgainstTheRunLimit() throws Exception {
    RunService service = filled(2, 2);
    assertThat(service.liveCount()).isEqualTo(2);

    // Every slot is held by a warm sandbox: a run that cannot use one is refused, not squeezed in.
    assertThatThrownBy(
            () ->
                service.start(
                    ACTOR, AgentGrant.EVERY, new RunRequest("other", List.of("ok"), Map.of())))
        .isInstanceOfSatisfying(
            RunRefusedException.class,
            e -> assertThat(e.refusal()).isEqualTo(Refusal.TOO_MANY_RUNS));
    // A run of the agent takes a warm sandbox and its slot.
    String runId = service.start(ACTOR, AgentGrant.EVERY, request("hangs"));
    assertThat(launchRow(runId).data().get("warm").asBoolean()).isTrue();
    assertThat(service.liveCount()).isEqualTo(2);
    service.kill(ACTOR, runId);
  }

  @Test
  void aLabelledRunGetsASandboxOfItsOwn() throws Exception {
    RunService service = filled(8, 2);

    String runId =
        service
            .run(
                ACTOR,
                AgentGrant.EVERY,
                new RunRequest(AGENT, List.of("ok"), Map.of(), Map.of("owner", "alice")))
            .record()
            .runId();

    assertThat(launchRow(runId).data().get("warm").asBoolean()).isFalse();
    assertThat(backend.prepared()).doesNotContainKey(runId);
  }

  @Test
  void aFailingPreparationGivesItsSlotBackAndBacksOff() {
    backend.prepareFails(true);
    RunService service = service(4);

    service.maintainWarmPool();

    // Both of warm: 2 were started in the one pass, and both failed.
    await().atMost(WAIT).until(() -> service.warmOutcomes().get("failed") == 2L);
    await().atMost(WAIT).until(() -> service.liveCount() == 0);
    service.maintainWarmPool(); // within the back-off: nothing is tried
    assertThat(service.warmOutcomes().get("failed")).isEqualTo(2L);
    assertThat(service.liveCount()).isZero();
    assertThat(backend.resources()).isEmpty();
  }

  @Test
  void shutdownRemovesEveryWarmSandbox() throws Exception {
    RunService service = filled(8, 2);
    assertThat(backend.resources()).hasSize(2);

    service.shutdown(WAIT);

    assertThat(backend.resources()).isEmpty();
    assertThat(service.liveCount()).isZero();
    service.maintainWarmPool(); // a closed pool prepares nothing more
    assertThat(backend.resources()).isEmpty();
  }
}
