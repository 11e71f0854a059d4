package dev.agentsandbox.runs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.backend.BackendSelector;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.AgentGrant;
import dev.agentsandbox.policy.config.AgentSettings;
import dev.agentsandbox.policy.config.Backend;
import dev.agentsandbox.policy.config.EgressPolicy;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.SandboxConfig;
import dev.agentsandbox.policy.event.EventType;
import dev.agentsandbox.policy.net.Reason;
import dev.agentsandbox.runs.InMemoryBackend.Ending;
import dev.agentsandbox.runs.InMemoryBackend.Script;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.AuditRow;
import dev.agentsandbox.store.RunRecord;
import dev.agentsandbox.store.RunStatus;
import dev.agentsandbox.store.Store;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The runs core against a backend that runs nothing and the real SQLite store: admission and every
 * refusal, each way a run can end, teardown on every path, the concurrency limit under concurrent
 * requests, recovery after a restart, and the reaper. No Docker, no sleeps; every wait is bounded.
 */
class RunServiceTest {
  private static final Duration WAIT = Duration.ofSeconds(5);
  private static final String AGENT = "helper";
  private static final String ACTOR = "admin";

  @TempDir Path temp;

  private final ObjectMapper json = new ObjectMapper();
  private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
  private Store store;
  private InMemoryBackend backend;
  private volatile SandboxConfig config;

  @BeforeEach
  void open() {
    store = Store.open("jdbc:sqlite:" + temp.resolve("store.db"));
    backend = scripted(new InMemoryBackend("docker", Isolation.CONTAINER, Clock.systemUTC()));
    config = enabled(Backend.AUTO, false, 60);
  }

  @AfterEach
  void close() {
    executor.shutdownNow();
    store.close();
  }

  private static InMemoryBackend scripted(InMemoryBackend backend) {
    return backend
        .script("ok", Script.exits(0, "hello\n"))
        .script("fails", Script.exits(3, "bad\n"))
        .script("hangs", Script.runsUntilStopped())
        .script("nolaunch", new Script(Ending.FAIL_LAUNCH, 0, "", List.of(), false))
        .script("lost", new Script(Ending.FAIL_AWAIT, 0, "", List.of(), false))
        .script("mismatch", new Script(Ending.RUNTIME_MISMATCH, 0, "", List.of(), false))
        .script("proxydies", new Script(Ending.PROXY_DIED, 0, "", List.of(), false))
        .script("sticky", new Script(Ending.EXIT, 0, "", List.of(), true))
        .script(
            "egress",
            new Script(
                Ending.EXIT,
                0,
                "",
                List.of(
                    Decisions.deny("evil.example", 443, Reason.NOT_ALLOWED),
                    Decisions.allow("api.vendor.com", 443, true),
                    "not a decision: the recorder counts it and goes on"),
                false));
  }

  private static SandboxConfig enabled(Backend backend, boolean requireRuntimeClass, int ttl) {
    TreeMap<String, AgentSettings> agents = new TreeMap<>();
    agents.put(
        AGENT,
        new AgentSettings(
            AllowList.parse(List.of("api.vendor.com")),
            AgentSettings.DEFAULT_IMAGE,
            AGENT,
            ttl,
            Resources.DEFAULT));
    return new SandboxConfig(true, backend, requireRuntimeClass, agents);
  }

  private RunService service(int maxConcurrentRuns) {
    return service(maxConcurrentRuns, backend);
  }

  private RunService service(int maxConcurrentRuns, InMemoryBackend with) {
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
        new BackendSelector(List.of(with)),
        store,
        OperatorEgress.NONE,
        new RunSettings("cp-1", RunSettings.DEFAULT_TAIL_BYTES, 100, maxConcurrentRuns, 16),
        Clock.systemUTC(),
        executor,
        json,
        RunContractServices.Config.NONE.services(store));
  }

  private static RunRequest request(String... command) {
    return new RunRequest(AGENT, List.of(command), Map.of());
  }

  private List<AuditRow> audit(String type, String runId) {
    return store.audit().query(new AuditQuery(type, null, runId, null, null, 100));
  }

  private RunRecord stored(String runId) {
    return store.runs().find(runId).orElseThrow();
  }

  private static String runId(RunView view) {
    return view.record().runId();
  }

  // --- admission ---------------------------------------------------------------------------

  static Stream<Arguments> refusals() {
    return Stream.of(
        Arguments.of("no command", Refusal.INVALID_REQUEST, new String[] {}),
        Arguments.of("sandboxes off", Refusal.SANDBOXES_DISABLED, new String[] {"ok"}),
        Arguments.of("agent not listed", Refusal.AGENT_NOT_LISTED, new String[] {"ok"}),
        Arguments.of("proxy variable in env", Refusal.ENV_REFUSED, new String[] {"ok"}),
        Arguments.of("named backend missing", Refusal.BACKEND_UNAVAILABLE, new String[] {"ok"}),
        Arguments.of("backend down", Refusal.BACKEND_UNAVAILABLE, new String[] {"ok"}),
        Arguments.of("gVisor demanded", Refusal.RUNTIME_CLASS_REQUIRED, new String[] {"ok"}));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("refusals")
  void aRefusedRunCreatesNothingAndIsAudited(String name, Refusal refusal, String[] command) {
    RunService service = service(4);
    String agent = AGENT;
    Map<String, String> env = Map.of();
    switch (name) {
      case "sandboxes off" ->
          config = new SandboxConfig(false, Backend.AUTO, false, config.agents());
      case "agent not listed" -> agent = "stranger";
      case "proxy variable in env" -> env = Map.of("HTTPS_PROXY", "http://elsewhere:3128");
      case "named backend missing" -> config = enabled(Backend.K8S, false, 60);
      case "backend down" -> backend.available(false);
      case "gVisor demanded" -> config = enabled(Backend.AUTO, true, 60);
      default -> {}
    }
    RunRequest request = new RunRequest(agent, List.of(command), env);

    assertThatThrownBy(() -> service.start(ACTOR, AgentGrant.EVERY, request))
        .isInstanceOfSatisfying(
            RunRefusedException.class, e -> assertThat(e.refusal()).isEqualTo(refusal));

    List<AuditRow> refused = audit(EventType.REFUSED.wireName(), null);
    assertThat(refused).hasSize(1);
    assertThat(refused.get(0).data().get("reason").asText()).isEqualTo(refusal.code());
    assertThat(audit(EventType.LAUNCH.wireName(), null)).isEmpty();
    assertThat(store.runs().recent(10)).isEmpty();
    assertThat(backend.resources()).isEmpty();
    assertThat(service.liveCount()).isZero();
  }

  /**
   * A token limited to other agents gets exactly what a run of an unlisted agent gets (its code and
   * message), creates nothing, and its refusal row names the token and the agents it is limited to
   * (docs/architecture.md invariant 13).
   */
  @Test
  void aTokenOfOtherAgentsIsRefusedExactlyAsAnAgentThatIsNotListed() {
    RunService service = service(4);
    AgentGrant planners = AgentGrant.only(List.of("planner"));
    SandboxConfig withHelper = config;

    RunRefusedException limited =
        catchThrowableOfType(
            () -> service.start("team-b", planners, request("ok")), RunRefusedException.class);
    RunRefusedException planned =
        catchThrowableOfType(
            () -> service.plan(request("ok"), planners), RunRefusedException.class);
    config = new SandboxConfig(true, Backend.AUTO, false, new TreeMap<>());
    RunRefusedException unlisted =
        catchThrowableOfType(
            () -> service.start(ACTOR, AgentGrant.EVERY, request("ok")), RunRefusedException.class);

    assertThat(limited.refusal()).isEqualTo(Refusal.AGENT_NOT_LISTED);
    assertThat(limited.getMessage()).isEqualTo(unlisted.getMessage());
    assertThat(limited.problems()).isEqualTo(unlisted.problems()).isEmpty();
    assertThat(planned.refusal()).isEqualTo(Refusal.AGENT_NOT_LISTED);
    assertThat(planned.getMessage()).doesNotContain("planner");
    assertThat(store.runs().recent(10)).isEmpty();
    assertThat(backend.resources()).isEmpty();
    List<AuditRow> refused = audit(EventType.REFUSED.wireName(), null);
    assertThat(refused).extracting(AuditRow::actor).containsExactly("team-b", ACTOR);
    assertThat(refused.get(0).agent()).isEqualTo(AGENT);
    assertThat(refused.get(0).data().get("token_agents").toString()).isEqualTo("[\"planner\"]");
    assertThat(refused.get(1).data().has("token_agents")).isFalse();

    // The same token runs its own agent, and sees only its runs.
    config = withAgent(withHelper, "planner");
    String helpers = service.start(ACTOR, AgentGrant.EVERY, request("ok"));
    String runId =
        service.start("team-b", planners, new RunRequest("planner", List.of("ok"), Map.of()));
    assertThat(service.agentOf(runId)).contains("planner");
    assertThat(service.agentOf(helpers)).contains(AGENT);
    assertThat(service.recent(planners, null, null, null, null, Map.of(), 10))
        .extracting(RunRecord::runId)
        .containsExactly(runId);
    assertThat(service.recent(planners, AGENT, null, null, null, Map.of(), 10)).isEmpty();
    assertThat(service.agentOf("nosuchrun0000000000a")).isEmpty();
  }

  private static SandboxConfig withAgent(SandboxConfig config, String name) {
    TreeMap<String, AgentSettings> agents = new TreeMap<>(config.agents());
    agents.put(
        name,
        new AgentSettings(
            AllowList.EMPTY, AgentSettings.DEFAULT_IMAGE, name, 60, Resources.DEFAULT));
    return new SandboxConfig(true, config.backend(), config.requireRuntimeClass(), agents);
  }

  @Test
  void theConcurrencyLimitHoldsUnderConcurrentRequests() throws Exception {
    RunService service = service(2);
    int requests = 24;
    CountDownLatch gate = new CountDownLatch(1);
    List<Future<String>> answers = new ArrayList<>();
    try (ExecutorService callers = Executors.newVirtualThreadPerTaskExecutor()) {
      for (int i = 0; i < requests; i++) {
        answers.add(
            callers.submit(
                () -> {
                  gate.await();
                  try {
                    return service.start(ACTOR, AgentGrant.EVERY, request("hangs"));
                  } catch (RunRefusedException e) {
                    return e.refusal().code();
                  }
                }));
      }
      gate.countDown();
      List<String> started = new ArrayList<>();
      int refused = 0;
      for (Future<String> answer : answers) {
        String value = answer.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        if (value.equals(Refusal.TOO_MANY_RUNS.code())) {
          refused++;
        } else {
          started.add(value);
        }
      }
      assertThat(started).hasSize(2);
      assertThat(refused).isEqualTo(requests - 2);
      assertThat(service.liveCount()).isEqualTo(2);
      assertThat(audit(EventType.REFUSED.wireName(), null)).hasSize(requests - 2);

      for (String runId : started) {
        assertThat(backend.awaitStarted(runId, WAIT)).isTrue();
        assertThat(service.kill(ACTOR, runId)).isTrue();
      }
      // Both slots come back once the runs retire; a new run is admitted then.
      await().atMost(WAIT).until(() -> service.liveCount() == 0);
      assertThat(service.run(ACTOR, AgentGrant.EVERY, request("ok")).record().status())
          .isEqualTo(RunStatus.EXITED);
    }
  }

  // --- how runs end, and teardown on every path ----------------------------------------------

  @Test
  void theStartedRowNamesTheProxyPoolStandbyARunWasBuiltOn() throws Exception {
    RunService service = service(4);
    backend.pooledProxy = "sb-abcdefghijklmnop";

    String runId = runId(service.run(ACTOR, AgentGrant.EVERY, request("ok")));

    AuditRow started = audit(EventType.STARTED.wireName(), runId).get(0);
    assertThat(started.data().get("proxy_pool").asText()).isEqualTo("sb-abcdefghijklmnop");
  }

  @Test
  void aNormalExitIsRecordedAndTornDown() throws Exception {
    RunService service = service(4);

    RunView view = service.run(ACTOR, AgentGrant.EVERY, request("ok"));

    String runId = runId(view);
    assertThat(view.record().status()).isEqualTo(RunStatus.EXITED);
    assertThat(view.record().exitStatus()).isZero();
    assertThat(view.outputTail()).isEqualTo("hello\n");
    assertThat(view.live()).isPresent();
    RunRecord record = stored(runId);
    assertThat(record.status()).isEqualTo(RunStatus.EXITED);
    assertThat(record.outputTail()).isEqualTo("hello\n");
    awaitTornDown(runId);
    assertThat(backend.teardowns(runId)).isEqualTo(1);
    assertThat(backend.resources()).isEmpty();
    assertThat(audit(EventType.LAUNCH.wireName(), runId)).hasSize(1);
    AuditRow started = audit(EventType.STARTED.wireName(), runId).get(0);
    assertThat(started.data().get("runtime").asText()).isEqualTo(backend.probe().runtime());
    assertThat(started.data().get("image_id").asText())
        .isEqualTo(InMemoryBackend.imageIdOf(AgentSettings.DEFAULT_IMAGE));
    assertThat(started.data().has("proxy_pool")).as("not built on a standby").isFalse();
    AuditRow teardown = audit(EventType.TEARDOWN.wireName(), runId).get(0);
    assertThat(teardown.data().get("removed").asBoolean()).isTrue();
    assertThat(teardown.data().get("end").asText()).isEqualTo("exit");
    assertThat(started.id()).isGreaterThan(audit(EventType.LAUNCH.wireName(), runId).get(0).id());
    assertThat(service.liveCount()).isZero();
  }

  @Test
  void egressDecisionsBecomeAuditRows() throws Exception {
    String runId = runId(service(4).run(ACTOR, AgentGrant.EVERY, request("egress")));

    assertThat(audit("agent_sandbox.egress", runId))
        .extracting(AuditRow::type)
        .containsExactlyInAnyOrder("agent_sandbox.egress.deny", "agent_sandbox.egress.allow");
  }

  @Test
  void aFailedLaunchIsRecordedAndLeavesNothing() throws Exception {
    String runId = runId(service(4).run(ACTOR, AgentGrant.EVERY, request("nolaunch")));

    assertThat(stored(runId).status()).isEqualTo(RunStatus.FAILED);
    AuditRow failure = audit(EventType.FAILURE.wireName(), runId).get(0);
    assertThat(failure.data().get("stage").asText()).isEqualTo("launch");
    assertThat(failure.data().get("message").asText()).contains("the scripted launch failed");
    AuditRow teardown = awaitTornDown(runId);
    assertThat(teardown.data().get("removed").asBoolean()).isFalse();
    assertThat(teardown.data().get("note").asText()).contains("the launch failed");
    assertThat(audit(EventType.STARTED.wireName(), runId)).as("nothing started").isEmpty();
    assertThat(backend.teardowns(runId)).isZero();
    assertThat(backend.resources()).isEmpty();
  }

  @Test
  void aRuntimeMismatchIsAFailureWithItsOwnReasonAndAuditRow() throws Exception {
    String runId = runId(service(4).run(ACTOR, AgentGrant.EVERY, request("mismatch")));

    RunRecord record = stored(runId);
    assertThat(record.status()).isEqualTo(RunStatus.FAILED);
    assertThat(record.endReason()).isEqualTo("runtime_mismatch");
    AuditRow mismatch = audit(EventType.RUNTIME_MISMATCH.wireName(), runId).get(0);
    assertThat(mismatch.data().get("message").asText()).contains("not under gVisor");
    assertThat(audit(EventType.FAILURE.wireName(), runId)).isEmpty();
    assertThat(awaitTornDown(runId).data().get("end").asText()).isEqualTo("runtime_mismatch");
    assertThat(backend.resources()).isEmpty();
  }

  @Test
  void aDeadProxyIsAFailureWithItsOwnReasonAndAuditRow() throws Exception {
    String runId = runId(service(4).run(ACTOR, AgentGrant.EVERY, request("proxydies")));

    RunRecord record = stored(runId);
    assertThat(record.status()).isEqualTo(RunStatus.FAILED);
    assertThat(record.endReason()).isEqualTo("proxy_died");
    AuditRow died = audit(EventType.PROXY_DIED.wireName(), runId).get(0);
    assertThat(died.data().get("message").asText()).contains("scripted proxy stopped");
    assertThat(audit(EventType.FAILURE.wireName(), runId)).isEmpty();
    assertThat(awaitTornDown(runId).data().get("end").asText()).isEqualTo("proxy_died");
    assertThat(backend.resources()).isEmpty();
  }

  @Test
  void aWorkloadLostWhileAwaitedIsFailedAndTornDown() throws Exception {
    String runId = runId(service(4).run(ACTOR, AgentGrant.EVERY, request("lost")));

    assertThat(stored(runId).status()).isEqualTo(RunStatus.FAILED);
    assertThat(audit(EventType.FAILURE.wireName(), runId).get(0).data().get("stage").asText())
        .isEqualTo("run");
    awaitTornDown(runId);
    assertThat(backend.teardowns(runId)).isEqualTo(1);
    assertThat(backend.resources()).isEmpty();
  }

  @Test
  void theDeadlineEndsARunAndTearsItDown() throws Exception {
    // The backend's clock runs a TTL ahead, so the run's one-second deadline passes at once.
    config = enabled(Backend.AUTO, false, 1);
    InMemoryBackend ahead =
        scripted(
            new InMemoryBackend(
                "docker",
                Isolation.CONTAINER,
                Clock.offset(Clock.systemUTC(), Duration.ofSeconds(1))));
    backend = ahead;

    String runId = runId(service(4, ahead).run(ACTOR, AgentGrant.EVERY, request("hangs")));

    assertThat(stored(runId).status()).isEqualTo(RunStatus.DEADLINE);
    assertThat(stored(runId).endReason()).isEqualTo("deadline");
    assertThat(audit(EventType.TIMEOUT.wireName(), runId).get(0).data().get("ttl_seconds").asInt())
        .isEqualTo(1);
    awaitTornDown(runId);
    assertThat(ahead.teardowns(runId)).isEqualTo(1);
    assertThat(ahead.resources()).isEmpty();
  }

  @Test
  void aKillEndsARunAndTearsItDown() throws Exception {
    RunService service = service(4);
    String runId = service.start(ACTOR, AgentGrant.EVERY, request("hangs"));
    assertThat(backend.awaitStarted(runId, WAIT)).isTrue();

    assertThat(service.kill(ACTOR, runId)).isTrue();

    RunRecord ended = awaitEnded(runId);
    assertThat(ended.status()).isEqualTo(RunStatus.KILLED);
    assertThat(audit(EventType.KILL.wireName(), runId)).hasSize(1);
    awaitTornDown(runId);
    assertThat(backend.teardowns(runId)).isEqualTo(1);
    assertThat(backend.resources()).isEmpty();
    assertThat(service.kill(ACTOR, runId)).isFalse();
    assertThatThrownBy(() -> service.kill(ACTOR, "nosuchrun"))
        .isInstanceOf(RunNotFoundException.class);
  }

  @Test
  void aFailedTeardownIsReportedAndTheReaperRemovesTheRest() throws Exception {
    RunService service = service(4);
    String runId = runId(service.run(ACTOR, AgentGrant.EVERY, request("sticky")));

    AuditRow teardown = awaitTornDown(runId);
    assertThat(teardown.data().get("removed").asBoolean()).isFalse();
    assertThat(teardown.data().get("problem").asText())
        .contains("the scripted teardown failed")
        .contains("the reaper removes what is left");
    assertThat(stored(runId).status()).isEqualTo(RunStatus.EXITED);
    assertThat(backend.resources()).containsExactly(runId);

    Reaper reaper =
        new Reaper(List.of(backend), service::isLive, store.audit(), Clock.systemUTC(), json);
    assertThat(reaper.reapOnce()).isEqualTo(1);

    assertThat(backend.resources()).isEmpty();
    assertThat(audit(EventType.TEARDOWN.wireName(), runId))
        .anySatisfy(row -> assertThat(row.actor()).isEqualTo("reaper"));
  }

  @Test
  void theResultIsAnsweredBeforeTheSandboxIsRemovedAndTheTeardownRowFollows() throws Exception {
    RunService service = service(1);
    Reaper reaper =
        new Reaper(List.of(backend), service::isLive, store.audit(), Clock.systemUTC(), json);
    backend.holdTeardowns();
    try {
      // Bounded: a response that waited for the removal would wait for the held teardown.
      RunView view =
          executor
              .submit(() -> service.run(ACTOR, AgentGrant.EVERY, request("ok")))
              .get(10, TimeUnit.SECONDS);

      String runId = runId(view);
      // The result is whole: status, exit status, output, the run's row and its audit rows.
      assertThat(view.record().status()).isEqualTo(RunStatus.EXITED);
      assertThat(view.record().exitStatus()).isZero();
      assertThat(view.outputTail()).isEqualTo("hello\n");
      assertThat(stored(runId).status()).isEqualTo(RunStatus.EXITED);
      assertThat(stored(runId).endedAt()).isNotNull();
      assertThat(audit(EventType.ARTIFACTS.wireName(), runId)).hasSize(1);
      // Its sandbox is still there, being removed: no teardown row yet, its slot still taken, the
      // reaper leaves it to the run, and it can no longer be killed.
      assertThat(audit(EventType.TEARDOWN.wireName(), runId)).isEmpty();
      assertThat(backend.resources()).containsExactly(runId);
      assertThat(service.liveCount()).isEqualTo(1);
      assertThat(service.isLive(runId)).isTrue();
      assertThat(reaper.reapOnce()).isZero();
      assertThat(backend.resources()).containsExactly(runId);
      assertThat(service.kill(ACTOR, runId)).isFalse();
      assertThat(audit(EventType.KILL.wireName(), runId)).isEmpty();
      assertThatThrownBy(() -> service.start(ACTOR, AgentGrant.EVERY, request("ok")))
          .isInstanceOfSatisfying(
              RunRefusedException.class,
              e -> assertThat(e.refusal()).isEqualTo(Refusal.TOO_MANY_RUNS));

      backend.openTeardowns();

      AuditRow teardown = awaitTornDown(runId);
      assertThat(teardown.actor()).isEqualTo(ACTOR);
      assertThat(teardown.data().get("removed").asBoolean()).isTrue();
      assertThat(teardown.data().get("end").asText()).isEqualTo("exit");
      assertThat(teardown.data().get("exit_status").asInt()).isZero();
      assertThat(teardown.id())
          .isGreaterThan(audit(EventType.ARTIFACTS.wireName(), runId).get(0).id());
      assertThat(backend.resources()).isEmpty();
      await().atMost(WAIT).until(service::liveCount, n -> n == 0);
    } finally {
      backend.openTeardowns();
    }
  }

  @Test
  void shutdownWaitsForTeardownsStillGoing() throws Exception {
    RunService service = service(4);
    backend.holdTeardowns();
    try {
      String runId = runId(service.run(ACTOR, AgentGrant.EVERY, request("ok")));
      Future<?> shutdown =
          executor.submit(
              () -> {
                service.shutdown(Duration.ofSeconds(30));
                return null;
              });
      // While the teardown is held, shutdown cannot have finished.
      assertThatThrownBy(() -> shutdown.get(300, TimeUnit.MILLISECONDS))
          .isInstanceOf(java.util.concurrent.TimeoutException.class);

      backend.openTeardowns();

      shutdown.get(10, TimeUnit.SECONDS);
      assertThat(audit(EventType.TEARDOWN.wireName(), runId)).hasSize(1);
      assertThat(backend.resources()).isEmpty();
      assertThat(service.liveCount()).isZero();
    } finally {
      backend.openTeardowns();
    }
  }

  @Test
  void theReaperSparesLiveRunsAndUnknownUnexpiredOnes() throws Exception {
    RunService service = service(4);
    String live = service.start(ACTOR, AgentGrant.EVERY, request("hangs"));
    assertThat(backend.awaitStarted(live, WAIT)).isTrue();
    backend.leave("otherplane", Instant.now().plus(Duration.ofHours(1)));
    backend.leave("expired", Instant.now().minus(Duration.ofMinutes(1)));
    Reaper reaper =
        new Reaper(List.of(backend), service::isLive, store.audit(), Clock.systemUTC(), json);

    assertThat(reaper.reapOnce()).isEqualTo(1);

    assertThat(backend.resources()).containsExactlyInAnyOrder(live, "otherplane");
    service.kill(ACTOR, live);
    awaitEnded(live);
  }

  // --- restart --------------------------------------------------------------------------------

  @Test
  void recoverMarksRunsALostControlPlaneLeftLiveAsFailed() throws Exception {
    RunService before = service(4);
    String runId = before.start(ACTOR, AgentGrant.EVERY, request("hangs"));
    assertThat(backend.awaitStarted(runId, WAIT)).isTrue();
    assertThat(stored(runId).status()).isEqualTo(RunStatus.RUNNING);

    // A new life of the same control plane (same instance id) over the same store.
    RunService after =
        service(4, new InMemoryBackend("docker", Isolation.CONTAINER, Clock.systemUTC()));
    assertThat(after.recover()).isEqualTo(1);

    assertThat(stored(runId).status()).isEqualTo(RunStatus.FAILED);
    assertThat(audit(EventType.FAILURE.wireName(), runId).get(0).data().get("stage").asText())
        .isEqualTo("recovery");
    assertThat(after.isLive(runId)).isFalse();
    before.kill(ACTOR, runId);
  }

  /**
   * Waits (bounded) for the run's own teardown row: the sandbox is removed after the run's result
   * is answered.
   */
  private AuditRow awaitTornDown(String runId) {
    return await()
        .atMost(WAIT)
        .until(
            () ->
                audit(EventType.TEARDOWN.wireName(), runId).stream()
                    .filter(row -> !row.actor().equals("reaper"))
                    .findFirst(),
            java.util.Optional::isPresent)
        .orElseThrow();
  }

  private RunRecord awaitEnded(String runId) {
    return await()
        .atMost(WAIT)
        .until(
            () -> stored(runId), record -> !record.status().active() && record.endedAt() != null);
  }
}
