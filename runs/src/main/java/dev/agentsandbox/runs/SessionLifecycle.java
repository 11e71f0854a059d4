package dev.agentsandbox.runs;

import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.session.SessionSandbox;
import dev.agentsandbox.runs.session.StepEndReason;
import dev.agentsandbox.store.RunRecord;
import dev.agentsandbox.store.StepRecord;
import dev.agentsandbox.store.Store;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a session's life adds to a run's ({@link RunLifecycle} calls it): its sandbox opened (or a
 * warm one handed over as a session), waited on beside its idle clock, its running steps ended
 * before its credentials are revoked and its outputs collected, and its end told apart (closed,
 * idle); at recovery, the steps a dead control plane left running recorded as ended. Thread-safe.
 */
final class SessionLifecycle {
  private static final Logger LOG = LoggerFactory.getLogger(SessionLifecycle.class);

  /** How long the end of a session waits for its running steps to be recorded. */
  static final Duration STEPS_GRACE = Duration.ofSeconds(20);

  private final Store store;
  private final SessionAudit audit;
  private final Clock clock;
  private final ExecutorService executor;

  SessionLifecycle(Store store, SessionAudit audit, Clock clock, ExecutorService executor) {
    this.store = store;
    this.audit = audit;
    this.clock = clock;
    this.executor = executor;
  }

  /** Creates the session's sandbox, or takes its warm one over as a session. */
  SessionSandbox open(LiveRun run) {
    return run.prepared.isPresent()
        ? run.prepared.get().handOverSession(run.spec, run.listener())
        : run.backend.openSession(run.spec, run.listener());
  }

  /**
   * Waits until the session's sandbox ends: killed (the session closed or went idle), its deadline,
   * or the backend failing. Its idle clock runs beside it on a thread of its own, which writes the
   * {@code agent_sandbox.idle} row and ends the sandbox when it runs out.
   */
  Completion await(LiveRun run, SessionSandbox sandbox, Instant deadline)
      throws InterruptedException {
    LiveSession session = run.session.orElseThrow();
    Future<?> idle =
        executor.submit(
            () -> {
              try {
                Optional<Instant> last = session.awaitIdle();
                if (last.isPresent()) {
                  try {
                    audit.idle(
                        run.actor, run.spec.agent(), run.runId(), session.idleSeconds, last.get());
                  } finally {
                    sandbox.kill();
                  }
                }
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            });
    try {
      return sandbox.await(deadline);
    } finally {
      session.markEnding();
      idle.cancel(true);
    }
  }

  /**
   * Ends what the session still runs, whichever way it ended: nothing new is accepted, each running
   * step is killed and waited for until its end is recorded ({@code session_ended}), a caller still
   * waiting for the sandbox is told it never came.
   */
  void endSteps(LiveRun run) {
    LiveSession session = run.session.orElseThrow();
    session.markEnding();
    session.ready.completeExceptionally(
        new IllegalStateException("the session ended before its sandbox was ready"));
    // Steps that ended but are not recorded yet are waited for too: their rows come before the
    // session's artifacts and teardown.
    List<LiveStep> running = session.unrecordedSteps();
    running.forEach(LiveStep::endWithSession);
    Instant until = clock.instant().plus(STEPS_GRACE);
    for (LiveStep step : running) {
      long left = Math.max(0, Duration.between(clock.instant(), until).toMillis());
      try {
        step.ended.get(left, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (ExecutionException | TimeoutException e) {
        LOG.warn("session {}: step {} was not recorded as ended in time", run.runId(), step.number);
      }
    }
  }

  /**
   * How a session ended: a kill that was a close or the idle clock is {@code closed} or {@code
   * idle}; a workload that stopped by itself is a failure (a session's workload only waits); the
   * rest as for any run.
   */
  static Optional<String> normalEnd(LiveRun run, Completion.End end) {
    Optional<dev.agentsandbox.runs.session.SessionEnding> asked =
        run.session.orElseThrow().requested();
    if (asked.isPresent() && (end == Completion.End.KILLED || end == Completion.End.EXIT)) {
      return Optional.of(asked.get().wireName());
    }
    return Optional.empty();
  }

  /**
   * The steps of a session a dead control plane left running: recorded as ended {@code
   * session_ended}, each with its {@code agent_sandbox.exec} row, so that its timeline is whole.
   */
  void recoverSteps(RunRecord session, Instant now, String why) {
    for (StepRecord step : store.steps().running(session.runId())) {
      long duration = Math.max(0, Duration.between(step.startedAt(), now).toMillis());
      StepRecord ended =
          step.ended(
              now,
              StepEndReason.SESSION_ENDED.wireName(),
              null,
              duration,
              step.outputBytes(),
              step.stdoutTail(),
              step.stderrTail(),
              step.outputTruncated(),
              step.egressDenied(),
              why);
      store.steps().update(ended);
      audit.exec("control-plane", session.agent(), StoredSteps.view(ended, Optional.empty()));
    }
  }
}
