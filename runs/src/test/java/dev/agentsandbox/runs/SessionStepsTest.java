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

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.policy.config.AgentGrant;
import dev.agentsandbox.policy.config.SessionLimits;
import dev.agentsandbox.policy.event.DecisionRecord;
import dev.agentsandbox.policy.event.EventType;
import dev.agentsandbox.policy.net.Reason;
import dev.agentsandbox.runs.session.ExecRequest;
import dev.agentsandbox.runs.session.SessionError;
import dev.agentsandbox.runs.session.SessionRefusedException;
import dev.agentsandbox.runs.session.StepEndReason;
import dev.agentsandbox.runs.session.StepView;
import dev.agentsandbox.store.AuditRow;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The steps of a session against local processes: numbers from 1 and their rows, background steps,
 * kills and time-outs that stop a step and what it started, at most eight at once, a thousand in a
 * row, a flood of output, stdin over the cap, every refusal audited, redaction with the step's own
 * env values, and proxy decisions attributed to the steps that were running.
 */
class SessionStepsTest {
  @TempDir Path temp;
  SessionFixture f;
  RunService service;
  String id;

  @BeforeEach
  void open_() throws Exception {
    f = new SessionFixture(temp);
  }

  @AfterEach
  void close_() throws Exception {
    if (id != null
        && service.sessions().isSession(id)
        && service.view(id).record().status().active()) {
      service.sessions().close(ACTOR, id);
    }
    f.close();
  }

  private void start() throws Exception {
    service = f.service();
    id =
        service
            .sessions()
            .open(
                ACTOR,
                AgentGrant.EVERY,
                open(Map.of("SESSION_SECRET", "s3cr3t-session-value"), 300))
            .record()
            .runId();
  }

  private static ExecRequest step(
      List<String> command, Map<String, String> env, String stdin, int timeout) {
    return new ExecRequest(command, env, "/workspace", stdin, timeout, false);
  }

  private SessionRefusedException refusal(ExecRequest request) {
    try {
      service.sessions().exec(ACTOR, id, request);
    } catch (SessionRefusedException e) {
      return e;
    }
    throw new AssertionError("the step was not refused");
  }

  @Test
  void eachStepIsNumberedFromOneAndWritesItsStartAndEndRows() throws Exception {
    start();
    StepView first = run(service, id, sh("echo one"));
    StepView second =
        run(service, id, step(List.of("sh", "-c", "cat; exit 7"), Map.of(), "fed on stdin\n", 60));

    assertThat(first.step()).isEqualTo(1);
    assertThat(second.step()).isEqualTo(2);
    assertThat(second.exitStatus()).isEqualTo(7);
    assertThat(second.output().orElseThrow().stdout()).isEqualTo("fed on stdin\n");
    assertThat(second.stdinBytes()).isEqualTo(13);
    List<AuditRow> starts = f.audit(EventType.EXEC_START.wireName(), id);
    List<AuditRow> ends = f.audit(EventType.EXEC.wireName(), id);
    assertThat(starts).extracting(r -> r.data().get("step").asInt()).containsExactly(1, 2);
    assertThat(ends).extracting(r -> r.data().get("exit_status").asInt()).containsExactly(0, 7);
    assertThat(starts.get(1).data().get("stdin_bytes").asInt()).isEqualTo(13);
    assertThat(starts.get(0).id())
        .as("the start row comes before the end row")
        .isLessThan(ends.get(0).id());
    assertThat(ends.get(1).data().get("duration_ms").asLong()).isGreaterThanOrEqualTo(0);
    assertThat(ends.get(1).data().get("output_bytes").asLong()).isEqualTo(13);
    assertThat(f.store.steps().find(id, 2).orElseThrow().stdoutTail()).isEqualTo("fed on stdin\n");
    assertThat(service.view(id).session().orElseThrow().steps()).isEqualTo(2);
    assertThat(service.view(id).outputTail()).isEqualTo("one\nfed on stdin\n");
  }

  @Test
  void aStepRunsInItsCwdAndTheSessionKeepsWhatItWrote() throws Exception {
    start();
    run(service, id, sh("mkdir -p app && echo built > app/state"));

    StepView read =
        run(service, id, new ExecRequest(List.of("cat", "state"), Map.of(), "app", "", 60, false));

    assertThat(read.cwd()).isEqualTo("/workspace/app");
    assertThat(read.output().orElseThrow().stdout()).isEqualTo("built\n");
  }

  @Test
  void aBackgroundStepAnswersAtOnceAndRunsBesideOthersUntilKilled() throws Exception {
    start();
    long before = System.nanoTime();
    RunningStep server = service.sessions().exec(ACTOR, id, background("echo serving; sleep 60"));
    assertThat((System.nanoTime() - before) / 1_000_000).as("answered at once").isLessThan(5_000);
    assertThat(server.ended()).isFalse();
    assertThat(run(service, id, sh("echo beside")).output().orElseThrow().stdout())
        .isEqualTo("beside\n");
    await()
        .atMost(WAIT)
        .until(
            () ->
                service.sessions().step(id, 1).output().orElseThrow().stdout().equals("serving\n"));

    service.sessions().killStep(ACTOR, id, 1);

    StepView killed = server.await(WAIT).orElseThrow();
    assertThat(killed.end()).contains(StepEndReason.KILLED);
    assertThat(killed.exitStatus()).isEqualTo(137);
    assertThat(f.audit(EventType.STEP_KILL.wireName(), id)).hasSize(1);
    assertThat(
            f.audit(EventType.STEP_KILL.wireName(), id).get(0).data().get("requested_by").asText())
        .isEqualTo(ACTOR);
    assertThatThrownBy(() -> service.sessions().killStep(ACTOR, id, 1))
        .isInstanceOfSatisfying(
            SessionRefusedException.class,
            e -> assertThat(e.error()).isEqualTo(SessionError.STEP_ENDED));
    assertThatThrownBy(() -> service.sessions().killStep(ACTOR, id, 99))
        .isInstanceOfSatisfying(
            SessionRefusedException.class,
            e -> assertThat(e.error()).isEqualTo(SessionError.STEP_NOT_FOUND));
    assertThatThrownBy(() -> service.sessions().step(id, 99))
        .isInstanceOfSatisfying(
            SessionRefusedException.class,
            e -> assertThat(e.error()).isEqualTo(SessionError.STEP_NOT_FOUND));
  }

  @Test
  void aTimeOutKillsTheStepAndWhatItStarted() throws Exception {
    start();
    long before = System.nanoTime();

    StepView timedOut =
        run(
            service,
            id,
            step(List.of("sh", "-c", "sleep 120 & echo $! > child.pid; wait"), Map.of(), "", 1));

    assertThat(timedOut.end()).contains(StepEndReason.TIMEOUT);
    assertThat((System.nanoTime() - before) / 1e9).isLessThan(15);
    long child =
        Long.parseLong(
            run(service, id, sh("cat child.pid")).output().orElseThrow().stdout().strip());
    await().atMost(WAIT).until(() -> ProcessHandle.of(child).map(p -> !p.isAlive()).orElse(true));
    assertThat(f.audit(EventType.EXEC.wireName(), id).get(0).data().get("end").asText())
        .isEqualTo("timeout");
  }

  @Test
  void atMostEightStepsRunAtOnce() throws Exception {
    start();
    List<RunningStep> running = new ArrayList<>();
    for (int i = 0; i < LiveSession.MAX_RUNNING_STEPS; i++) {
      running.add(service.sessions().exec(ACTOR, id, background("sleep 60")));
    }

    assertThat(refusal(sh("true")).error()).isEqualTo(SessionError.TOO_MANY_STEPS);
    assertThat(f.audit(EventType.EXEC_REFUSED.wireName(), id).get(0).data().get("error").asText())
        .isEqualTo("too_many_steps");

    service.sessions().killStep(ACTOR, id, 3);
    assertThat(running.get(2).await(WAIT).orElseThrow().end()).contains(StepEndReason.KILLED);
    assertThat(run(service, id, sh("echo room")).step()).isEqualTo(9);
  }

  @Test
  void aThousandStepsInARowEachRecordedAndTheMemoryHeldBounded() throws Exception {
    start();
    long before = System.nanoTime();
    for (int n = 1; n <= 1000; n++) {
      StepView step = run(service, id, step(List.of("true"), Map.of(), "", 60));
      assertThat(step.step()).isEqualTo(n);
      assertThat(step.exitStatus()).isZero();
    }
    double seconds = (System.nanoTime() - before) / 1e9;
    System.out.printf("1,000 steps in a row: %.1f s, %.1f ms a step%n", seconds, seconds);

    assertThat(f.store.steps().count(id)).isEqualTo(1000);
    assertThat(service.sessions().steps(id, 0, 10_000)).hasSize(1000);
    assertThat(service.sessions().steps(id, 990, 5))
        .extracting(StepView::step)
        .containsExactly(991, 992, 993, 994, 995);
    LiveSession session = service.sessions().isSession(id) ? heldSession() : null;
    assertThat(session.held(1)).as("an old step is the store's, not memory's").isEmpty();
    assertThat(session.held(1000)).isPresent();
    assertThat(service.sessions().step(id, 1).exitStatus()).isZero();
    assertThat(f.audit(EventType.EXEC.wireName(), id)).hasSize(1000);
  }

  private LiveSession heldSession() throws Exception {
    return service.parts().live().held(id).orElseThrow().session.orElseThrow();
  }

  @Test
  void aStepThatFloodsItsOutputKeepsOnlyBoundedTails() throws Exception {
    start();

    StepView flood =
        run(
            service,
            id,
            sh("yes flood-line-of-output | head -c 5000016; yes err | head -c 300000 >&2"));

    StepView.Output out = flood.output().orElseThrow();
    assertThat(flood.outputBytes()).isEqualTo(5_300_016);
    assertThat(out.truncated()).isTrue();
    assertThat(out.stdout().length()).isLessThanOrEqualTo(RunSettings.DEFAULT_TAIL_BYTES);
    assertThat(out.stdout()).endsWith("flood-line-of-output\n");
    assertThat(out.stderr().length()).isLessThanOrEqualTo(RunSettings.DEFAULT_TAIL_BYTES);
    assertThat(out.stderr())
        .as("one stream's flood never evicts the other's tail")
        .endsWith("err\n");
    assertThat(f.store.steps().find(id, 1).orElseThrow().stdoutTail().length())
        .isLessThanOrEqualTo(SessionSteps.STORED_TAIL_BYTES);
    assertThat(service.view(id).outputTail().length())
        .isLessThanOrEqualTo(RunSettings.DEFAULT_TAIL_BYTES);
    assertThat(run(service, id, sh("echo after")).output().orElseThrow().stdout())
        .isEqualTo("after\n");
  }

  @Test
  void stdinOverTheAgentsCapIsRefusedBeforeTheStepGetsANumber() throws Exception {
    f.limits = new SessionLimits(SessionLimits.DEFAULT.maxFileBytes(), 16);
    start();

    assertThat(
            run(service, id, step(List.of("cat"), Map.of(), "x".repeat(16), 60))
                .output()
                .orElseThrow()
                .stdout())
        .isEqualTo("x".repeat(16));
    SessionRefusedException e = refusal(step(List.of("cat"), Map.of(), "x".repeat(17), 60));

    assertThat(e.error()).isEqualTo(SessionError.STDIN_TOO_LARGE);
    assertThat(e.getMessage()).contains("17 bytes").contains("max_stdin_bytes of 16");
    assertThat(f.audit(EventType.EXEC_REFUSED.wireName(), id)).hasSize(1);
    assertThat(f.store.steps().count(id)).isEqualTo(1);
  }

  @Test
  void badStepsAreRefusedAsWrittenAndAudited() throws Exception {
    start();
    assertThat(refusal(step(List.of(), Map.of(), "", 60)).error())
        .isEqualTo(SessionError.INVALID_REQUEST);
    assertThat(refusal(step(List.of("true"), Map.of(), "", 0)).error())
        .isEqualTo(SessionError.INVALID_REQUEST);
    assertThat(refusal(step(List.of("true"), Map.of(), "", 14_401)).error())
        .isEqualTo(SessionError.INVALID_REQUEST);
    for (String cwd : List.of("/etc", "..", "a/../b", "/workspacex", "a//b")) {
      assertThat(refusal(new ExecRequest(List.of("true"), Map.of(), cwd, "", 60, false)).error())
          .as("cwd %s", cwd)
          .isEqualTo(SessionError.INVALID_PATH);
    }
    assertThatThrownBy(
            () ->
                service
                    .sessions()
                    .exec(
                        ACTOR,
                        id,
                        step(List.of("true"), Map.of("HTTPS_PROXY", "http://evil:3128"), "", 60)))
        .isInstanceOfSatisfying(
            RunRefusedException.class, e -> assertThat(e.refusal()).isEqualTo(Refusal.ENV_REFUSED));
    assertThat(f.audit(EventType.EXEC_REFUSED.wireName(), id)).hasSize(9);
    assertThat(f.store.steps().count(id)).as("no refused step got a number").isZero();
  }

  @Test
  void secretsAreRedactedFromOutputTailsAndRowsIncludingAStepsOwnEnvValues() throws Exception {
    start();
    StepView leak =
        run(
            service,
            id,
            step(
                List.of(
                    "sh",
                    "-c",
                    "echo $SESSION_SECRET $STEP_SECRET; echo $RUN_TOKEN",
                    "argument-secret-value"),
                Map.of("STEP_SECRET", "argument-secret-value"),
                "",
                60));
    StepView later = run(service, id, sh("echo argument-secret-value again"));

    assertThat(leak.output().orElseThrow().stdout())
        .doesNotContain("s3cr3t-session-value", "argument-secret-value");
    assertThat(leak.output().orElseThrow().stdout()).startsWith("[REDACTED] [REDACTED]\n");
    String token = f.backend.session(id).credentials().get(0).value();
    assertThat(leak.output().orElseThrow().stdout()).doesNotContain(token);
    assertThat(leak.command())
        .containsExactly(
            "sh", "-c", "echo $SESSION_SECRET $STEP_SECRET; echo $RUN_TOKEN", "[REDACTED]");
    assertThat(later.output().orElseThrow().stdout())
        .as("a step's env value joins the session's redaction for its later steps")
        .isEqualTo("[REDACTED] again\n");
    String everything =
        f.audit(null, id).toString()
            + service.view(id).outputTail()
            + f.store.steps().find(id, 1).orElseThrow();
    assertThat(everything).doesNotContain("s3cr3t-session-value", "argument-secret-value", token);
    AuditRow start = f.audit(EventType.EXEC_START.wireName(), id).get(0);
    assertThat(start.data().get("env_keys").get(0).asText()).isEqualTo("STEP_SECRET");
  }

  @Test
  void decisionsAreAttributedToTheStepsRunningWhenTheProxyMadeThem() throws Exception {
    start();
    RunningStep server = service.sessions().exec(ACTOR, id, background("sleep 60"));
    RunningStep test = service.sessions().exec(ACTOR, id, background("sleep 60"));
    f.backend.session(id).decide(decision("deny", "pypi.org", Instant.now()));
    service.sessions().killStep(ACTOR, id, 2);
    StepView ended = test.await(WAIT).orElseThrow();
    // Reported after step 2 ended, but made while it ran: it is step 2's too.
    f.backend.session(id).decide(decision("deny", "late.example", ended.endedAt().minusMillis(1)));
    f.backend.session(id).decide(decision("allow", "api.vendor.com", Instant.now()));

    assertThat(service.sessions().step(id, 1).output().orElseThrow().egress())
        .extracting(d -> d.get("host"))
        .containsExactly("pypi.org", "late.example", "api.vendor.com");
    StepView two = service.sessions().step(id, 2);
    assertThat(two.output().orElseThrow().egress())
        .extracting(d -> d.get("host"))
        .containsExactly("pypi.org", "late.example");
    assertThat(two.egressDenied()).isEqualTo(2);
    List<AuditRow> denies = f.audit("agent_sandbox.egress.deny", id);
    assertThat(denies).hasSize(2);
    assertThat(denies.get(0).data().get("steps")).extracting(JsonNode::asInt).containsExactly(1, 2);
    assertThat(f.audit("agent_sandbox.egress.allow", id).get(0).data().get("steps"))
        .extracting(JsonNode::asInt)
        .containsExactly(1);
    service.sessions().killStep(ACTOR, id, 1);
    assertThat(server.await(WAIT).orElseThrow().end()).contains(StepEndReason.KILLED);
  }

  @Test
  void aRefusalReportedJustAfterTheCommandExitedIsInTheStepsAnswer() throws Exception {
    // The proxy writes a refusal before it answers the client, but the line reaches the control
    // plane by another stream than the step's end: here it is delivered only once the step's
    // output has closed, i.e. after the command exited and its end was seen (CI saw exactly this
    // on Docker: curl's 403 in the answer, the refusal missing).
    start();
    RunningStep step = service.sessions().exec(ACTOR, id, sh("echo fetching; sleep 0.3; exit 22"));
    RunOutput.Chunk first = step.output().read(0, WAIT.toMillis());
    assertThat(first.lines()).contains("fetching\n");
    Instant madeAt = Instant.now();
    long seq = first.nextSeq();
    for (int i = 0; i < 1000; i++) {
      RunOutput.Chunk next = step.output().read(seq, 100);
      seq = next.nextSeq();
      if (next.finished()) {
        break;
      }
    }
    f.backend.session(id).decide(decision("deny", "denied.test", madeAt));

    StepView answer = step.await(WAIT).orElseThrow();

    assertThat(answer.exitStatus()).isEqualTo(22);
    assertThat(answer.output().orElseThrow().egress())
        .extracting(d -> d.get("host"))
        .as("the exec answer waits for decisions still on their way")
        .containsExactly("denied.test");
    assertThat(answer.egressDenied()).isEqualTo(1);
    assertThat(f.audit(EventType.EXEC.wireName(), id).get(0).data().get("egress_denied").asInt())
        .isEqualTo(1);
  }

  /** A proxy decision line as the proxy writes it (its DecisionRecord), made at {@code at}. */
  private static String decision(String decision, String host, Instant at) {
    boolean allowed = decision.equals("allow");
    return Decisions.line(
        new DecisionRecord(
            at,
            "run",
            "172.30.0.2:40000",
            "CONNECT",
            host,
            443,
            allowed,
            allowed ? Reason.ALLOWED : Reason.NOT_ALLOWED,
            allowed ? "203.0.113.7" : null,
            0,
            0,
            1,
            allowed,
            null,
            null));
  }

  @Test
  void aStepWhoseClientWentAwayGoesOnAndItsRowSaysSo() throws Exception {
    start();
    RunningStep step = service.sessions().exec(ACTOR, id, sh("sleep 1; echo done"));
    step.clientGone();

    StepView view = step.await(WAIT).orElseThrow();

    assertThat(view.end()).contains(StepEndReason.EXIT);
    assertThat(view.output().orElseThrow().stdout()).isEqualTo("done\n");
    assertThat(f.audit(EventType.EXEC.wireName(), id).get(0).data().get("detail").asText())
        .contains("the client went away");
  }

  @Test
  void aStepAndAFileTouchOnlyTheirOwnSession() throws Exception {
    start();
    String other = service.sessions().open(ACTOR, AgentGrant.EVERY, open()).record().runId();
    try {
      run(service, id, sh("echo mine > only-here.txt"));
      service
          .sessions()
          .put(
              ACTOR,
              id,
              "put-here.txt",
              false,
              new java.io.ByteArrayInputStream(new byte[] {1}),
              1);

      StepView there = run(service, other, sh("cat only-here.txt put-here.txt"));

      assertThat(there.exitStatus()).isNotZero();
      assertThat(there.output().orElseThrow().stdout())
          .doesNotContain("mine")
          .doesNotContain("only-here");
      assertThatThrownBy(
              () ->
                  service
                      .sessions()
                      .get(
                          ACTOR,
                          other,
                          "only-here.txt",
                          dev.agentsandbox.runs.session.FileForm.FILE))
          .isInstanceOfSatisfying(
              SessionRefusedException.class,
              e -> assertThat(e.error()).isEqualTo(SessionError.FILE_NOT_FOUND));
      assertThat(f.backend.session(id).folder()).isNotEqualTo(f.backend.session(other).folder());
      assertThat(f.audit(EventType.EXEC.wireName(), other)).hasSize(1);
      assertThat(f.audit(EventType.EXEC.wireName(), id)).hasSize(1);
    } finally {
      service.sessions().close(ACTOR, other);
    }
  }

  @Test
  void aStepThatCannotStartInItsFolderIsRecordedAndRefused() throws Exception {
    start();
    run(service, id, sh("ln -s /etc escape"));

    SessionRefusedException link =
        refusal(new ExecRequest(List.of("cat", "passwd"), Map.of(), "escape", "", 60, false));
    SessionRefusedException missing =
        refusal(new ExecRequest(List.of("true"), Map.of(), "nowhere", "", 60, false));

    assertThat(link.error()).isEqualTo(SessionError.PATH_REFUSED);
    assertThat(link.reason()).contains("symlink");
    assertThat(missing.error()).isEqualTo(SessionError.FILE_NOT_FOUND);
    assertThat(f.store.steps().find(id, 2).orElseThrow().endReason()).isEqualTo("error");
    assertThat(f.audit(EventType.EXEC.wireName(), id)).hasSize(3);
  }
}
