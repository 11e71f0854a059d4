package dev.agentsandbox.runs;

import static dev.agentsandbox.runs.SessionFixture.ACTOR;
import static dev.agentsandbox.runs.SessionFixture.WAIT;
import static dev.agentsandbox.runs.SessionFixture.background;
import static dev.agentsandbox.runs.SessionFixture.open;
import static dev.agentsandbox.runs.SessionFixture.run;
import static dev.agentsandbox.runs.SessionFixture.sh;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.policy.config.AgentGrant;
import dev.agentsandbox.policy.event.EventType;
import dev.agentsandbox.runs.session.SessionError;
import dev.agentsandbox.runs.session.SessionRefusedException;
import dev.agentsandbox.runs.session.SessionRequest;
import dev.agentsandbox.runs.session.StepEndReason;
import dev.agentsandbox.runs.session.StepView;
import dev.agentsandbox.store.AuditRow;
import dev.agentsandbox.store.RunKind;
import dev.agentsandbox.store.RunRecord;
import dev.agentsandbox.store.RunStatus;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A session's life against the in-memory backend (local processes) and real SQLite: opened through
 * a run's admission and rows, then ended each way it can end — closed, idle, its deadline, its
 * backend failing under a step, the control plane restarting under it — with its steps recorded
 * {@code session_ended}, its credentials revoked, its outputs collected and its sandbox removed on
 * every path. Every wait is bounded.
 */
class SessionLifecycleTest {
  @TempDir Path temp;
  SessionFixture f;

  @BeforeEach
  void open_() {
    f = new SessionFixture(temp);
  }

  @AfterEach
  void close_() {
    f.close();
  }

  private RunRecord stored(String runId) {
    return f.store.runs().find(runId).orElseThrow();
  }

  private List<String> types(String runId) {
    return f.audit(null, runId).stream().map(AuditRow::type).toList();
  }

  @Test
  void aSessionOpensAsARunWithItsRowsAndIsReadyForAStep() throws Exception {
    RunService service = f.service();

    RunView opened = service.sessions().open(ACTOR, AgentGrant.EVERY, open());

    String id = opened.record().runId();
    assertThat(opened.record().kind()).isEqualTo(RunKind.SESSION);
    assertThat(opened.record().status()).isEqualTo(RunStatus.RUNNING);
    assertThat(opened.record().command().isNull()).isTrue();
    assertThat(opened.session())
        .hasValueSatisfying(
            s -> {
              assertThat(s.idleSeconds()).isEqualTo(300);
              assertThat(s.steps()).isZero();
              assertThat(s.warm()).contains(false);
              assertThat(s.idleExpiresAt()).isAfter(Instant.now().plusSeconds(250));
            });
    AuditRow launch = f.audit(EventType.LAUNCH.wireName(), id).get(0);
    assertThat(launch.data().get("kind").asText()).isEqualTo("session");
    assertThat(launch.data().get("idle_seconds").asInt()).isEqualTo(300);
    assertThat(launch.data().get("command")).as("a session's steps come later").isEmpty();
    assertThat(types(id))
        .containsSubsequence(
            EventType.LAUNCH.wireName(),
            EventType.CREDENTIALS_ISSUE.wireName(),
            EventType.STARTED.wireName());
    assertThat(f.backend.resources()).contains(id);
    assertThat(service.liveCount()).as("a session holds a run slot").isEqualTo(1);

    StepView step = run(service, id, sh("echo hello; echo oops >&2; exit 3"));
    assertThat(step.exitStatus()).isEqualTo(3);
    assertThat(step.output().orElseThrow().stdout()).isEqualTo("hello\n");
    assertThat(step.output().orElseThrow().stderr()).isEqualTo("oops\n");
    service.sessions().close(ACTOR, id);
  }

  @Test
  void closingEndsRunningStepsRevokesCollectsAndTearsDown() throws Exception {
    RunService service = f.service();
    String id = service.sessions().open(ACTOR, AgentGrant.EVERY, open()).record().runId();
    String token = f.backend.session(id).credentials().get(0).value();
    assertThat(f.store.tokens().authenticate(token)).isPresent();
    run(service, id, sh("mkdir -p out && echo 42 > out/answer.txt"));
    RunningStep server = service.sessions().exec(ACTOR, id, background("sleep 60"));

    RunView closed = service.sessions().close(ACTOR, id);

    assertThat(closed.record().status()).isEqualTo(RunStatus.CLOSED);
    assertThat(closed.record().endReason()).isEqualTo("closed");
    assertThat(closed.record().exitStatus()).isNull();
    StepView ended = server.await(WAIT).orElseThrow();
    assertThat(ended.end()).contains(StepEndReason.SESSION_ENDED);
    assertThat(f.store.steps().find(id, 2).orElseThrow().endReason()).isEqualTo("session_ended");
    assertThat(f.store.tokens().authenticate(token)).as("the run token died with it").isEmpty();
    AuditRow artifacts = f.audit(EventType.ARTIFACTS.wireName(), id).get(0);
    assertThat(artifacts.data().get("collected").asBoolean()).isTrue();
    assertThat(artifacts.data().get("files").get(0).get("path").asText()).isEqualTo("answer.txt");
    await().atMost(WAIT).until(() -> !f.audit(EventType.TEARDOWN.wireName(), id).isEmpty());
    AuditRow teardown = f.audit(EventType.TEARDOWN.wireName(), id).get(0);
    assertThat(teardown.data().get("end").asText()).isEqualTo("closed");
    assertThat(teardown.data().get("removed").asBoolean()).isTrue();
    assertThat(f.backend.resources()).doesNotContain(id);
    assertThat(types(id))
        .containsSubsequence(
            EventType.CLOSE.wireName(),
            EventType.EXEC.wireName(),
            EventType.ARTIFACTS.wireName(),
            EventType.TEARDOWN.wireName());
    await().atMost(WAIT).until(() -> service.liveCount() == 0);

    assertThatThrownBy(() -> service.sessions().exec(ACTOR, id, sh("true")))
        .as("a closed session takes no step")
        .isInstanceOfSatisfying(
            SessionRefusedException.class,
            e -> assertThat(e.error()).isEqualTo(SessionError.RUN_ENDED));
    assertThatThrownBy(() -> service.sessions().close(ACTOR, id))
        .isInstanceOfSatisfying(
            SessionRefusedException.class,
            e -> assertThat(e.error()).isEqualTo(SessionError.RUN_ENDED));
    assertThat(service.sessions().step(id, 1).exitStatus()).as("its steps stay readable").isZero();
  }

  @Test
  void noActivityForTheIdleTimeEndsItIdleButARunningStepPausesTheClock() throws Exception {
    RunService service = f.service();
    String id =
        service.sessions().open(ACTOR, AgentGrant.EVERY, open(Map.of(), 1)).record().runId();
    long start = System.nanoTime();

    StepView slow = run(service, id, sh("sleep 2; echo still here"));

    assertThat(slow.end()).contains(StepEndReason.EXIT);
    assertThat(service.view(id).record().status())
        .as("a step longer than the idle time keeps the session")
        .isEqualTo(RunStatus.RUNNING);
    await().atMost(WAIT).until(() -> !stored(id).status().active());
    double seconds = (System.nanoTime() - start) / 1e9;
    assertThat(stored(id).status()).isEqualTo(RunStatus.CLOSED);
    assertThat(stored(id).endReason()).isEqualTo("idle");
    assertThat(seconds)
        .as("ended a little after the idle second that followed the step")
        .isGreaterThan(2.9);
    AuditRow idle = f.audit(EventType.IDLE.wireName(), id).get(0);
    assertThat(idle.data().get("idle_seconds").asInt()).isEqualTo(1);
    await().atMost(WAIT).until(() -> !f.audit(EventType.TEARDOWN.wireName(), id).isEmpty());
    assertThat(f.audit(EventType.TEARDOWN.wireName(), id).get(0).data().get("end").asText())
        .isEqualTo("idle");
    assertThat(f.backend.resources()).doesNotContain(id);
  }

  @Test
  void theHardDeadlineEndsItWithARunningStepKilled() throws Exception {
    f.ttlSeconds = 2;
    RunService service = f.service();
    String id =
        service.sessions().open(ACTOR, AgentGrant.EVERY, open(Map.of(), 2)).record().runId();
    RunningStep step = service.sessions().exec(ACTOR, id, background("sleep 60"));

    StepView ended = step.await(WAIT).orElseThrow();

    assertThat(ended.end()).contains(StepEndReason.SESSION_ENDED);
    assertThat(ended.timeoutSeconds())
        .as("its time-out was bounded by the deadline")
        .isLessThanOrEqualTo(2);
    await().atMost(WAIT).until(() -> !stored(id).status().active());
    assertThat(stored(id).status()).isEqualTo(RunStatus.DEADLINE);
    assertThat(f.audit(EventType.TIMEOUT.wireName(), id)).hasSize(1);
    await().atMost(WAIT).until(() -> !f.backend.resources().contains(id));
  }

  @Test
  void theBackendFailingUnderAStepFailsTheSessionAndEndsTheStep() throws Exception {
    RunService service = f.service();
    String id = service.sessions().open(ACTOR, AgentGrant.EVERY, open()).record().runId();
    RunningStep step = service.sessions().exec(ACTOR, id, background("sleep 60"));

    f.backend.session(id).fail(Completion.End.PROXY_DIED, "the scripted proxy stopped");

    assertThat(step.await(WAIT).orElseThrow().end()).contains(StepEndReason.SESSION_ENDED);
    await().atMost(WAIT).until(() -> !stored(id).status().active());
    assertThat(stored(id).status()).isEqualTo(RunStatus.FAILED);
    assertThat(stored(id).endReason()).isEqualTo("proxy_died");
    assertThat(f.audit(EventType.PROXY_DIED.wireName(), id)).hasSize(1);
    await().atMost(WAIT).until(() -> !f.backend.resources().contains(id));
  }

  @Test
  void aSandboxThatDoesNotComeUpAnswersSessionFailedWithItsRunRecordedFailed() {
    RunService service = f.service();
    f.backend.sessionOpenFails(true);

    String[] runId = new String[1];
    assertThatThrownBy(() -> service.sessions().open(ACTOR, AgentGrant.EVERY, open()))
        .isInstanceOfSatisfying(
            SessionRefusedException.class,
            e -> {
              assertThat(e.error()).isEqualTo(SessionError.SESSION_FAILED);
              assertThat(e.runId()).isPresent();
              runId[0] = e.runId().get();
            });
    assertThat(stored(runId[0]).status()).isEqualTo(RunStatus.FAILED);
    assertThat(f.audit(EventType.FAILURE.wireName(), runId[0])).hasSize(1);
    assertThat(f.backend.resources()).doesNotContain(runId[0]);
    await().atMost(WAIT).until(() -> service.liveCount() == 0);
  }

  @Test
  void theControlPlaneRestartingUnderASessionFailsItEndsItsStepsAndTheReaperRemovesIt()
      throws Exception {
    RunService first = f.service();
    String id = first.sessions().open(ACTOR, AgentGrant.EVERY, open()).record().runId();
    run(first, id, sh("true"));
    first.sessions().exec(ACTOR, id, background("sleep 60"));
    await().atMost(WAIT).until(() -> f.store.steps().running(id).size() == 1);
    // The first life dies without ending anything: its sandbox (and step) are left behind.
    InMemoryBackend after = new InMemoryBackend("docker", Isolation.CONTAINER, Clock.systemUTC());
    after.leave(id, stored(id).expiresAt());

    RunService second = f.service(after, "cp-1");
    assertThat(second.recover()).isEqualTo(1);

    assertThat(stored(id).status()).isEqualTo(RunStatus.FAILED);
    assertThat(f.store.steps().running(id)).isEmpty();
    assertThat(f.store.steps().find(id, 2).orElseThrow().endReason()).isEqualTo("session_ended");
    List<AuditRow> execs = f.audit(EventType.EXEC.wireName(), id);
    assertThat(execs).extracting(r -> r.data().get("step").asInt()).containsExactly(1, 2);
    assertThat(execs.get(1).data().get("end").asText()).isEqualTo("session_ended");
    assertThatThrownBy(() -> second.sessions().exec(ACTOR, id, sh("true")))
        .isInstanceOfSatisfying(
            SessionRefusedException.class,
            e -> assertThat(e.error()).isEqualTo(SessionError.RUN_ENDED));
    Reaper reaper =
        new Reaper(List.of(after), second::isLive, f.store.audit(), Clock.systemUTC(), f.json);
    assertThat(reaper.reapOnce()).isEqualTo(1);
    assertThat(after.resources()).isEmpty();
    first.sessions().close(ACTOR, id);
  }

  @Test
  void aWarmSandboxIsHandedOverAsASession() throws Exception {
    f.warm = 1;
    RunService service = f.service();
    service.maintainWarmPool();
    await()
        .atMost(WAIT)
        .until(
            () ->
                service.warmSandboxes().getOrDefault("helper", Map.of()).getOrDefault("ready", 0)
                    == 1);
    String prepared = f.backend.prepared().keySet().iterator().next();

    RunView opened = service.sessions().open(ACTOR, AgentGrant.EVERY, open());

    assertThat(opened.record().runId()).isEqualTo(prepared);
    assertThat(opened.session().orElseThrow().warm()).contains(true);
    assertThat(f.backend.handOvers(prepared)).isEqualTo(1);
    assertThat(f.audit(EventType.LAUNCH.wireName(), prepared).get(0).data().get("warm").asBoolean())
        .isTrue();
    assertThat(run(service, prepared, sh("echo warm")).output().orElseThrow().stdout())
        .isEqualTo("warm\n");
    service.sessions().close(ACTOR, prepared);
  }

  @Test
  void anIdleTimeOverTheTtlIsRefusedAndAudited() {
    f.ttlSeconds = 60;
    RunService service = f.service();

    assertThatThrownBy(
            () ->
                service
                    .sessions()
                    .open(
                        ACTOR,
                        AgentGrant.EVERY,
                        new SessionRequest("helper", Map.of(), Map.of(), OptionalInt.of(61))))
        .isInstanceOfSatisfying(
            RunRefusedException.class,
            e -> assertThat(e.refusal()).isEqualTo(Refusal.INVALID_REQUEST));
    AuditRow refused = f.audit(EventType.REFUSED.wireName(), null).get(0);
    assertThat(refused.data().get("kind").asText()).isEqualTo("session");
    assertThat(refused.data().get("command")).as("a session has no command").isEmpty();
    assertThat(f.store.runs().recent(10)).isEmpty();
  }

  @Test
  void aBackendThatTakesNoStepsRefusesTheSessionRatherThanFakingOne() {
    InMemoryBackend plain =
        new InMemoryBackend("docker", Isolation.CONTAINER, Clock.systemUTC()) {
          @Override
          public boolean opensSessions() {
            return false;
          }
        };
    RunService service = f.service(plain, "cp-1");

    assertThatThrownBy(() -> service.sessions().open(ACTOR, AgentGrant.EVERY, open()))
        .isInstanceOfSatisfying(
            RunRefusedException.class,
            e -> {
              assertThat(e.refusal()).isEqualTo(Refusal.BACKEND_UNAVAILABLE);
              assertThat(e.getMessage()).contains("does not take sessions' steps");
            });
    assertThat(plain.resources()).isEmpty();
    assertThat(service.liveCount()).isZero();
  }

  @Test
  void aOneShotRunIsNoSession() throws Exception {
    RunService service = f.service();
    String run =
        service
            .run(ACTOR, AgentGrant.EVERY, new RunRequest("helper", List.of("true"), Map.of()))
            .record()
            .runId();

    for (var attempt :
        List.<org.assertj.core.api.ThrowableAssert.ThrowingCallable>of(
            () -> service.sessions().exec(ACTOR, run, sh("true")),
            () -> service.sessions().steps(run, 0, 10),
            () ->
                service
                    .sessions()
                    .put(
                        ACTOR,
                        run,
                        "a.txt",
                        false,
                        new java.io.ByteArrayInputStream(new byte[1]),
                        1),
            () -> service.sessions().close(ACTOR, run))) {
      assertThatThrownBy(attempt)
          .isInstanceOfSatisfying(
              SessionRefusedException.class,
              e -> assertThat(e.error()).isEqualTo(SessionError.NOT_A_SESSION));
    }
    assertThatThrownBy(() -> service.sessions().exec(ACTOR, "nosuchrun", sh("true")))
        .isInstanceOf(RunNotFoundException.class);
    assertThat(service.sessions().isSession(run)).isFalse();
  }

  @Test
  void aClosedSessionIsAnsweredFromTheStoreAfterARestart() throws Exception {
    RunService first = f.service();
    String id = first.sessions().open(ACTOR, AgentGrant.EVERY, open()).record().runId();
    run(first, id, sh("echo from the store"));
    first.sessions().close(ACTOR, id);

    RunService second = f.service();
    RunView view = second.view(id);
    assertThat(view.record().status()).isEqualTo(RunStatus.CLOSED);
    assertThat(view.session().orElseThrow().steps()).isEqualTo(1);
    assertThat(view.outputTail()).isEqualTo("from the store\n");
    StepView step = second.sessions().step(id, 1);
    assertThat(step.output().orElseThrow().stdout()).isEqualTo("from the store\n");
    assertThat(second.sessions().steps(id, 0, 10)).extracting(StepView::step).containsExactly(1);
    assertThat(Files.exists(temp.resolve("store.db"))).isTrue();
  }
}
