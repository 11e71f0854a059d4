package dev.agentsandbox.runs;

import dev.agentsandbox.policy.config.AgentGrant;
import dev.agentsandbox.policy.event.EgressRecorded;
import dev.agentsandbox.runs.session.ExecRequest;
import dev.agentsandbox.runs.session.FileForm;
import dev.agentsandbox.runs.session.FileRead;
import dev.agentsandbox.runs.session.FileWritten;
import dev.agentsandbox.runs.session.SessionError;
import dev.agentsandbox.runs.session.SessionRefusedException;
import dev.agentsandbox.runs.session.SessionRequest;
import dev.agentsandbox.runs.session.StepView;
import dev.agentsandbox.store.RunRecord;
import dev.agentsandbox.store.StepRecord;
import dev.agentsandbox.store.Store;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;

/**
 * The sessions of this control plane (docs/api.md, "Sessions"): opens them through the same
 * admission, launch row and lifecycle as any run, and serves their steps, files and ending. A
 * session is a run in every other way ({@link RunService} answers for it as for any run). Every
 * operation names its session by run id and is refused as a closed value ({@link SessionError})
 * when the run is no session, has ended, or the request breaks a rule. Thread-safe.
 */
public final class Sessions {
  private final Store store;
  private final RunAdmission admission;
  private final RunSlots slots;
  private final WarmPool pool;
  private final RunLauncher launcher;
  private final LiveRuns live;
  private final ExecutorService executor;
  private final SessionAudit audit;
  private final SessionSteps steps;
  private final SessionFiles files;

  Sessions(
      Store store,
      RunAdmission admission,
      RunSlots slots,
      WarmPool pool,
      RunLauncher launcher,
      LiveRuns live,
      ExecutorService executor,
      SessionAudit audit,
      SessionSteps steps,
      SessionFiles files) {
    this.store = store;
    this.admission = admission;
    this.slots = slots;
    this.pool = pool;
    this.launcher = launcher;
    this.live = live;
    this.executor = executor;
    this.audit = audit;
    this.steps = steps;
    this.files = files;
  }

  /**
   * Opens a session and answers once its sandbox is up and ready for a step.
   *
   * @throws RunRefusedException when it must not be opened (an {@code agent_sandbox.refused} row
   *     has been written)
   * @throws SessionRefusedException {@code session_failed} with its run id when its sandbox did not
   *     come up (the run is recorded failed with its rows)
   */
  public RunView open(String actor, AgentGrant grant, SessionRequest request)
      throws InterruptedException {
    RunRequest run =
        new RunRequest(
            request.agent(), RunAdmission.SESSION_COMMAND, request.env(), request.labels());
    Admission admitted =
        admission.admit(
            run,
            grant,
            slots,
            pool,
            Optional.of(new RunAdmission.SessionAsk(request.idleSeconds())));
    LiveRun launched =
        switch (admitted) {
          case Admission.Refused refused ->
              throw launcher.refuseSession(actor, grant, run, refused.refusal());
          case Admission.Admitted ok -> {
            if (ok.warm().isPresent()) {
              executor.execute(pool::refill); // prepare its replacement
            }
            yield launcher.launch(actor, grant, run, ok, live);
          }
        };
    LiveSession session = launched.session.orElseThrow();
    try {
      CompletableFuture.anyOf(session.ready, launched.ended).get();
    } catch (ExecutionException e) {
      // Either ended: which one is read below.
    }
    if (!session.ready.isCompletedExceptionally() && session.ready.isDone()) {
      return RunViews.run(launched);
    }
    try {
      launched.ended.get();
    } catch (ExecutionException e) {
      // Its end could not be recorded; the answer still names the run.
    }
    throw new SessionRefusedException(
        SessionError.SESSION_FAILED,
        "open a session of agent "
            + request.agent()
            + ": its sandbox did not come up ("
            + launched.detail()
            + "); GET .../runs/"
            + launched.runId()
            + "/timeline says what happened",
        null,
        launched.runId());
  }

  /**
   * Starts a step; {@link RunningStep#await()} gives its result.
   *
   * @throws SessionRefusedException or {@link RunRefusedException} ({@code env_refused}) when it is
   *     refused; refusals before it got a number write {@code agent_sandbox.exec.refused}
   */
  public RunningStep exec(String actor, String runId, ExecRequest request) {
    return steps.start(liveSession(runId, "start a step in"), actor, request);
  }

  /**
   * The session's steps numbered above {@code after}, in order, at most {@code limit}; summaries,
   * without output.
   */
  public List<StepView> steps(String runId, int after, int limit) {
    session(runId, "list the steps of");
    List<StepView> out = new ArrayList<>();
    for (StepRecord step : store.steps().list(runId, after, limit)) {
      out.add(StoredSteps.view(step, Optional.empty()));
    }
    return out;
  }

  /** One step: running or its result, with its output tails and decisions. */
  public StepView step(String runId, int number) {
    Optional<LiveRun> held = session(runId, "read a step of");
    if (held.isPresent()) {
      Optional<LiveStep> step = held.get().session.orElseThrow().held(number);
      if (step.isPresent()) {
        LiveStep s = step.get();
        if (s.ended.isDone() && !s.ended.isCompletedExceptionally()) {
          return StoredSteps.withDecisions(s.ended.join(), s.decisionTrees(), s.denied());
        }
        return s.view(runId, Optional.empty(), null, null, null, "");
      }
    }
    StepRecord record = store.steps().find(runId, number).orElseThrow(() -> noStep(runId, number));
    List<EgressRecorded> recorded = StoredSteps.decisions(store, runId, number);
    long denied = recorded.stream().filter(d -> !d.allowed()).count();
    List<Map<String, Object>> decisions =
        recorded.stream().map(EgressRecorded::listedTree).toList();
    StepView view =
        StoredSteps.view(
            record,
            Optional.of(
                new StepView.Output(
                    record.stdoutTail() == null ? "" : record.stdoutTail(),
                    record.stderrTail() == null ? "" : record.stderrTail(),
                    record.outputTruncated(),
                    decisions)));
    return StoredSteps.withDecisions(
        view, decisions, Math.max((int) denied, record.egressDenied()));
  }

  /**
   * A step's redacted output for streaming: live while this control plane holds the step, else its
   * stored tails as output that has already ended.
   */
  public RunOutput stepOutput(String runId, int number) {
    Optional<LiveRun> held = session(runId, "read a step of");
    if (held.isPresent()) {
      Optional<LiveStep> step = held.get().session.orElseThrow().held(number);
      if (step.isPresent()) {
        return step.get().combined;
      }
    }
    StepRecord record = store.steps().find(runId, number).orElseThrow(() -> noStep(runId, number));
    RunOutput stored =
        new RunOutput(new dev.agentsandbox.policy.run.Redactor(List.of()), 64 * 1024);
    if (record.stdoutTail() != null) {
      stored.append(record.stdoutTail().getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }
    if (record.stderrTail() != null) {
      stored.appendError(record.stderrTail().getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }
    stored.close();
    return stored;
  }

  /**
   * Kills one running step after writing {@code agent_sandbox.step.kill}.
   *
   * @throws SessionRefusedException {@code step_ended} when it already ended, {@code
   *     step_not_found} when no step has the number
   */
  public void killStep(String actor, String runId, int number) {
    LiveRun run = liveSession(runId, "kill a step of");
    LiveStep step =
        run.session
            .orElseThrow()
            .held(number)
            .orElseThrow(
                () ->
                    store.steps().find(runId, number).isPresent()
                        ? stepEnded(runId, number)
                        : noStep(runId, number));
    if (step.isEnded()) {
      throw stepEnded(runId, number);
    }
    audit.stepKill(actor, run.spec.agent(), runId, number);
    if (!step.requestKill()) {
      throw stepEnded(runId, number);
    }
  }

  /**
   * Writes one file ({@code tar} false) or extracts a tar under a folder into the session's
   * workspace, reading {@code body} as it comes, bounded by the agent's cap.
   *
   * @param declared the body's declared length, or -1 when unknown
   */
  public FileWritten put(
      String actor, String runId, String path, boolean tar, InputStream body, long declared) {
    return files.put(liveSession(runId, "put a file into"), actor, path, tar, body, declared);
  }

  /** Reads a file, a folder's tar or a folder's listing out of the session's workspace. */
  public FileRead get(String actor, String runId, String path, FileForm form) {
    return files.get(liveSession(runId, "get a file of"), actor, path, form);
  }

  /**
   * Closes a session: writes {@code agent_sandbox.close}, ends its running steps, stops its
   * workload, and answers once its outputs are collected and its result recorded. A session already
   * ending another way (its idle clock, its deadline, another close) is answered when it has ended.
   *
   * @throws SessionRefusedException {@code run_ended} when it had already ended
   */
  public RunView close(String actor, String runId) throws InterruptedException {
    LiveRun run = session(runId, "close").orElseThrow(() -> LiveSession.ended(runId));
    LiveSession session = run.session.orElseThrow();
    if (run.ended.isDone()) {
      throw LiveSession.ended(runId);
    }
    if (session.requestEnd(dev.agentsandbox.runs.session.SessionEnding.CLOSED)) {
      List<LiveStep> running = session.runningSteps();
      audit.close(actor, run.spec.agent(), runId, running.size());
      running.forEach(LiveStep::endWithSession);
      run.kill();
    }
    try {
      run.ended.get();
    } catch (ExecutionException e) {
      throw new RunException("closing " + runId + ": " + e.getCause().getMessage(), e);
    }
    return RunViews.run(run);
  }

  /** Whether the run is a session (held here or stored); false for an unknown id. */
  public boolean isSession(String runId) {
    Optional<LiveRun> held = live.held(runId);
    if (held.isPresent()) {
      return held.get().session.isPresent();
    }
    return RunIds.valid(runId) && store.runs().find(runId).map(RunRecord::isSession).orElse(false);
  }

  /** A session this control plane holds and that is live; refused otherwise. */
  private LiveRun liveSession(String runId, String doing) {
    LiveRun run = session(runId, doing).orElseThrow(() -> LiveSession.ended(runId));
    if (run.ended.isDone() || run.session.orElseThrow().isEnding()) {
      throw LiveSession.ended(runId);
    }
    return run;
  }

  /**
   * The session if this control plane holds it; empty when it is only stored (so it has ended).
   *
   * @throws RunNotFoundException when no run has the id
   * @throws SessionRefusedException {@code not_a_session} when the run is a one-shot run
   */
  private Optional<LiveRun> session(String runId, String doing) {
    Optional<LiveRun> held = live.held(runId);
    if (held.isPresent()) {
      if (held.get().session.isEmpty()) {
        throw notASession(runId, doing);
      }
      return held;
    }
    RunRecord record =
        (RunIds.valid(runId) ? store.runs().find(runId) : Optional.<RunRecord>empty())
            .orElseThrow(() -> new RunNotFoundException(runId));
    if (!record.isSession()) {
      throw notASession(runId, doing);
    }
    return Optional.empty();
  }

  private static SessionRefusedException notASession(String runId, String doing) {
    return new SessionRefusedException(
        SessionError.NOT_A_SESSION,
        doing
            + " "
            + runId
            + ": it is a one-shot run, not a session (open one with POST .../sessions)");
  }

  private static SessionRefusedException noStep(String runId, int number) {
    return new SessionRefusedException(
        SessionError.STEP_NOT_FOUND,
        "find step "
            + number
            + " of session "
            + runId
            + ": no step has this number (list them"
            + " with GET .../runs/"
            + runId
            + "/steps)");
  }

  private static SessionRefusedException stepEnded(String runId, int number) {
    return new SessionRefusedException(
        SessionError.STEP_ENDED,
        "kill step "
            + number
            + " of session "
            + runId
            + ": it has already ended (GET it for its"
            + " result)");
  }
}
