package dev.agentsandbox.runs;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import dev.agentsandbox.backend.session.PathRefusedException;
import dev.agentsandbox.backend.session.SessionSandbox;
import dev.agentsandbox.backend.session.Step;
import dev.agentsandbox.backend.session.StepEnd;
import dev.agentsandbox.backend.session.StepSpec;
import dev.agentsandbox.backend.session.UnableToRunStepException;
import dev.agentsandbox.backend.session.WorkspacePath;
import dev.agentsandbox.policy.run.Redactor;
import dev.agentsandbox.runs.session.ExecRequest;
import dev.agentsandbox.runs.session.SessionError;
import dev.agentsandbox.runs.session.SessionRefusedException;
import dev.agentsandbox.runs.session.StepView;
import dev.agentsandbox.store.StepRecord;
import dev.agentsandbox.store.Store;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the steps of sessions: checks a step before it gets a number, writes its start row and store
 * row before the backend starts it, follows it on a thread of its own to its end (killing it at its
 * time-out, with everything it started), feeds its redacted lines into the session's output, and
 * records its end (store row, {@code agent_sandbox.exec} row) before anyone waiting is answered.
 * Thread-safe.
 */
final class SessionSteps {
  private static final Logger LOG = LoggerFactory.getLogger(SessionSteps.class);

  /** How long a killed step may take to stop before it is recorded as lost. */
  static final Duration KILL_GRACE = Duration.ofSeconds(10);

  /**
   * How long after a step's command ended its answer waits for the proxy's decisions still on their
   * way (the proxy writes a refusal before it answers the client, but its line reaches the control
   * plane by another stream than the step's end). A decision made after the step ended cuts the
   * wait short; one that arrives later still is the step's in {@code GET .../steps/{n}} and the
   * timeline, not in its answer. Not waited when the backend says the sandbox opened no connection
   * while the step ran ({@link StepEnd#connectionsOpened()}: a hint from inside the sandbox, which
   * only ever shortens this wait and never changes what is audited).
   */
  static final Duration EGRESS_SETTLE = Duration.ofMillis(200);

  /** How much of each stream of a step the store keeps. */
  static final int STORED_TAIL_BYTES = 16 * 1024;

  private final Store store;
  private final SessionAudit audit;
  private final Clock clock;
  private final ExecutorService executor;
  private final ObjectMapper json;
  private final int tailBytes;

  SessionSteps(
      Store store,
      SessionAudit audit,
      Clock clock,
      ExecutorService executor,
      ObjectMapper json,
      int tailBytes) {
    this.store = store;
    this.audit = audit;
    this.clock = clock;
    this.executor = executor;
    this.json = json;
    this.tailBytes = tailBytes;
  }

  /**
   * Starts a step in {@code run}'s session. A step refused before it got a number writes {@code
   * agent_sandbox.exec.refused}; one the backend refused to start is recorded as ended {@code
   * error} with its rows, then refused.
   */
  RunningStep start(LiveRun run, String actor, ExecRequest request) {
    LiveSession session = run.session.orElseThrow();
    Redactor screen = new Redactor(request.env().values());
    LiveStep step;
    WorkspacePath cwd;
    SessionSandbox sandbox;
    try {
      cwd = StepChecks.check(run, session, request);
      sandbox = session.sandbox(run.runId());
      Instant now = clock.instant();
      Instant timeoutEnd = now.plusSeconds(request.timeoutSeconds());
      boolean deadlineBound = timeoutEnd.isAfter(session.deadline);
      Instant until = deadlineBound ? session.deadline : timeoutEnd;
      int applied =
          deadlineBound
              ? (int) Math.max(1, Duration.between(now, session.deadline).toSeconds())
              : request.timeoutSeconds();
      Redactor redactor = session.redactorWith(request.env().values());
      List<String> command = request.command().stream().map(redactor::redact).toList();
      step =
          session.reserve(
              run.runId(),
              number ->
                  new LiveStep(
                      number,
                      actor,
                      command,
                      cwd,
                      request.background(),
                      applied,
                      request.stdinBytes(),
                      now,
                      until,
                      deadlineBound,
                      new RunOutput(redactor, tailBytes),
                      new RunOutput(redactor, tailBytes),
                      new RunOutput(redactor, tailBytes)));
    } catch (SessionRefusedException | RunRefusedException e) {
      String code =
          e instanceof SessionRefusedException s
              ? s.error().code()
              : ((RunRefusedException) e).refusal().code();
      audit.execRefused(
          actor,
          run.spec.agent(),
          run.runId(),
          code,
          e.getMessage(),
          request.command().stream().map(screen::redact).toList(),
          request.env().keySet().stream().sorted().toList());
      throw e;
    }
    return begin(run, session, sandbox, step, request);
  }

  /** Writes the step's rows, asks the backend to start it and follows it. */
  private RunningStep begin(
      LiveRun run,
      LiveSession session,
      SessionSandbox sandbox,
      LiveStep step,
      ExecRequest request) {
    try {
      audit.execStart(
          step.actor,
          run.spec.agent(),
          run.runId(),
          step.number,
          step.command,
          step.cwd.absolute(),
          request.env().keySet().stream().sorted().toList(),
          step.stdinBytes,
          step.background,
          step.timeoutSeconds);
      store
          .steps()
          .insert(
              StepRecord.started(
                  run.runId(),
                  step.number,
                  step.actor,
                  commandJson(step.command),
                  step.cwd.absolute(),
                  step.background,
                  step.timeoutSeconds,
                  step.stdinBytes,
                  step.startedAt));
    } catch (RuntimeException e) {
      // Nothing started; the number stays used (its start row may be in the log).
      step.markEnded(clock.instant());
      step.ended.completeExceptionally(e);
      session.stepEnded(step);
      throw e;
    }
    Step handle;
    try {
      handle =
          sandbox.exec(
              new StepSpec(
                  step.number,
                  request.command(),
                  request.env(),
                  step.cwd,
                  request.stdin().getBytes(StandardCharsets.UTF_8)),
              step.listener());
    } catch (PathRefusedException e) {
      finish(
          run, session, step, lost("the folder it starts in was refused: " + e.getMessage()), null);
      if (e.reason() == PathRefusedException.Reason.NOT_FOUND) {
        throw new SessionRefusedException(
            SessionError.FILE_NOT_FOUND,
            "start step "
                + step.number
                + " in "
                + step.cwd
                + ": no folder is there (put one first)");
      }
      throw new SessionRefusedException(
          SessionError.PATH_REFUSED,
          "start step " + step.number + " in " + step.cwd + ": " + e.getMessage(),
          e.reason().wireName(),
          null);
    } catch (UnableToRunStepException e) {
      finish(run, session, step, lost(e.getMessage()), null);
      throw new SessionRefusedException(
          SessionError.STEP_FAILED,
          "start step "
              + step.number
              + " of session "
              + run.runId()
              + ": the backend could not start it ("
              + RunLifecycle.bounded(e.getMessage())
              + "); the session may still take steps");
    } catch (RuntimeException e) {
      finish(run, session, step, lost(e.getMessage()), null);
      throw e;
    }
    step.attach(handle);
    Future<?> pump =
        executor.submit(
            () -> {
              pump(run, step);
              return null;
            });
    executor.execute(() -> follow(run, session, step, handle, pump));
    return new RunningStep(run.runId(), step);
  }

  private static StepEnd lost(String why) {
    return new StepEnd(StepEnd.End.ERROR, OptionalInt.empty(), RunLifecycle.bounded(why));
  }

  /** Waits for the step to end, killing it at its time-out; then records it. */
  private void follow(
      LiveRun run, LiveSession session, LiveStep step, Step handle, Future<?> pump) {
    StepEnd end;
    try {
      Optional<StepEnd> seen = handle.awaitEnd(step.until);
      if (seen.isEmpty()) {
        step.timeOut();
        seen = handle.awaitEnd(clock.instant().plus(KILL_GRACE));
      }
      end =
          seen.orElse(
              lost(
                  "the step did not stop within " + KILL_GRACE.toSeconds() + " s of being killed"));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      handle.kill();
      end = lost("the control plane stopped following the step (it is shutting down)");
    } catch (RuntimeException e) {
      end = lost("following the step failed: " + e.getMessage());
    }
    finish(run, session, step, end, pump);
  }

  /**
   * Records how the step ended: its outputs closed, its store row and exec row, then its result.
   */
  private void finish(
      LiveRun run, LiveSession session, LiveStep step, StepEnd end, Future<?> pump) {
    Instant endedAt = clock.instant();
    long duration = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - step.startNanos);
    step.markEnded(endedAt);
    step.combined.close();
    step.stdout.close();
    step.stderr.close();
    if (pump != null) {
      try {
        pump.get(KILL_GRACE.toMillis(), TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
        LOG.warn(
            "session {}: step {}'s output did not reach the session's output: {}",
            run.runId(),
            step.number,
            e.toString());
      }
    }
    if (pump != null && end.connectionsOpened().orElse(1) > 0) {
      // A step that started, in a sandbox that opened a connection while it ran (or may have): its
      // decisions may still be on their way. With none opened the proxy decided nothing new.
      try {
        session.awaitDecisionsPast(endedAt, EGRESS_SETTLE);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    var reason = step.reason(end.end());
    String detail = reason == dev.agentsandbox.runs.session.StepEndReason.EXIT ? "" : end.detail();
    if (step.wasClientGone()) {
      detail =
          (detail.isEmpty() ? "" : detail + "; ")
              + "the client went away before the result (the step went on)";
    }
    Integer exit = end.exitStatus().isPresent() ? end.exitStatus().getAsInt() : null;
    StepView view = step.view(run.runId(), Optional.of(reason), exit, duration, endedAt, detail);
    try {
      store.steps().update(record(view, step.actor));
      audit.exec(step.actor, run.spec.agent(), view);
      session.stepEnded(step);
      step.ended.complete(view);
    } catch (RuntimeException e) {
      LOG.error(
          "session {}: recording the end of step {} failed: {}",
          run.runId(),
          step.number,
          e.getMessage());
      session.stepEnded(step);
      step.ended.completeExceptionally(e);
    }
  }

  /** Feeds the step's redacted lines into the session's output, each whole, as they come. */
  private void pump(LiveRun run, LiveStep step) throws InterruptedException {
    long seq = 0;
    while (true) {
      RunOutput.Chunk chunk = step.combined.read(seq, 1000);
      if (chunk.skippedLines() > 0) {
        run.output.append(
            ("[agent-sandbox: "
                    + chunk.skippedLines()
                    + " lines of step "
                    + step.number
                    + " left its retained tail unread]\n")
                .getBytes(StandardCharsets.UTF_8));
      }
      for (RunOutput.Line line : chunk.entries()) {
        String text = line.text().endsWith("\n") ? line.text() : line.text() + "\n";
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        if (line.stderr()) {
          run.output.appendError(bytes);
        } else {
          run.output.append(bytes);
        }
      }
      seq = chunk.nextSeq();
      if (chunk.finished()) {
        return;
      }
    }
  }

  /** The stored form of an ended step: its tails cut to what the store keeps. */
  StepRecord record(StepView view, String actor) {
    StepView.Output output = view.output().orElseThrow();
    String stdout = tail(output.stdout());
    String stderr = tail(output.stderr());
    boolean truncated =
        output.truncated()
            || stdout.length() < output.stdout().length()
            || stderr.length() < output.stderr().length();
    return StepRecord.started(
            view.runId(),
            view.step(),
            actor,
            commandJson(view.command()),
            view.cwd(),
            view.background(),
            view.timeoutSeconds(),
            view.stdinBytes(),
            view.startedAt())
        .ended(
            view.endedAt(),
            view.end().orElseThrow().wireName(),
            view.exitStatus(),
            view.durationMs(),
            view.outputBytes(),
            stdout,
            stderr,
            truncated,
            view.egressDenied(),
            view.detail());
  }

  private com.fasterxml.jackson.databind.JsonNode commandJson(List<String> command) {
    ArrayNode array = json.createArrayNode();
    command.forEach(array::add);
    return array;
  }

  /** The newest {@value #STORED_TAIL_BYTES} bytes of {@code text}, cut on a character boundary. */
  static String tail(String text) {
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    if (bytes.length <= STORED_TAIL_BYTES) {
      return text;
    }
    int start = bytes.length - STORED_TAIL_BYTES;
    while (start < bytes.length && (bytes[start] & 0xC0) == 0x80) {
      start++;
    }
    return new String(bytes, start, bytes.length - start, StandardCharsets.UTF_8);
  }
}
