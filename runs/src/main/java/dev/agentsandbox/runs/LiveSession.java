package dev.agentsandbox.runs;

import dev.agentsandbox.backend.session.SessionSandbox;
import dev.agentsandbox.policy.config.SessionLimits;
import dev.agentsandbox.policy.event.DecisionRecord;
import dev.agentsandbox.policy.run.Redactor;
import dev.agentsandbox.runs.session.SessionEnding;
import dev.agentsandbox.runs.session.SessionError;
import dev.agentsandbox.runs.session.SessionRefusedException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntFunction;

/**
 * What a live session holds beyond a run: its sandbox once ready, its step registry (numbers from
 * 1, at most {@value #MAX_RUNNING_STEPS} running), its idle clock, and how it is being ended. The
 * idle clock runs only while nothing is busy (no step running, no file operation in flight) and
 * restarts when the last of them ends. Once the session is ending nothing new is accepted.
 * Thread-safe: one lock guards it all.
 */
final class LiveSession {
  /** Most steps of one session running at once. */
  static final int MAX_RUNNING_STEPS = 8;

  /**
   * How many ended steps are held in memory with their whole output; older ones are the store's.
   */
  static final int ENDED_STEPS_HELD = 16;

  final int idleSeconds;
  final SessionLimits limits;

  /** The session's hard deadline: its steps' time-outs never pass it. */
  final Instant deadline;

  final CompletableFuture<SessionSandbox> ready = new CompletableFuture<>();
  private final Clock clock;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  // Guarded by lock.
  private final List<String> secrets;
  private final Map<Integer, LiveStep> steps = new LinkedHashMap<>();
  private Instant lastActivity;
  private int busy;
  private int running;
  private int started;
  private SessionEnding requested;
  private boolean ending;
  // The proxy's own time of the newest decision that reached this session (its stream is ordered).
  private Instant newestDecision = Instant.MIN;

  LiveSession(
      int idleSeconds, SessionLimits limits, Instant deadline, List<String> secrets, Clock clock) {
    if (idleSeconds < 1) {
      throw new IllegalArgumentException("a session's idle time is at least a second");
    }
    this.idleSeconds = idleSeconds;
    this.limits = limits;
    this.deadline = deadline;
    this.secrets = new ArrayList<>(secrets);
    this.clock = clock;
    this.lastActivity = clock.instant();
  }

  /** The sandbox is up and ready for a step: the idle clock starts now. */
  void opened(SessionSandbox sandbox) {
    lock.lock();
    try {
      lastActivity = clock.instant();
      changed.signalAll();
    } finally {
      lock.unlock();
    }
    ready.complete(sandbox);
  }

  /**
   * The session's sandbox, waiting while it comes up.
   *
   * @throws SessionRefusedException {@code run_ended} when it never came up or is ending
   */
  SessionSandbox sandbox(String runId) {
    try {
      SessionSandbox sandbox = ready.get();
      if (isEnding()) {
        throw ended(runId);
      }
      return sandbox;
    } catch (ExecutionException e) {
      throw ended(runId);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw ended(runId);
    }
  }

  static SessionRefusedException ended(String runId) {
    return new SessionRefusedException(
        SessionError.RUN_ENDED,
        "use session "
            + runId
            + ": it has ended (its steps and their output stay readable; its files are in its"
            + " artifacts)");
  }

  /**
   * Hands out the next step number and counts the step as running (the idle clock pauses), or
   * refuses: the session is ending, or already runs {@value #MAX_RUNNING_STEPS} steps.
   */
  LiveStep reserve(String runId, IntFunction<LiveStep> create) {
    lock.lock();
    try {
      if (ending) {
        throw ended(runId);
      }
      if (running >= MAX_RUNNING_STEPS) {
        throw new SessionRefusedException(
            SessionError.TOO_MANY_STEPS,
            "start a step in session "
                + runId
                + ": "
                + running
                + " steps run already, the most one session runs at once (wait for one, or kill"
                + " one with DELETE .../steps/{n})");
      }
      LiveStep step = create.apply(started + 1);
      started++;
      running++;
      busy++;
      steps.put(step.number, step);
      changed.signalAll();
      return step;
    } finally {
      lock.unlock();
    }
  }

  /** A step has ended (or never started): it no longer counts, and the idle clock restarts. */
  void stepEnded(LiveStep step) {
    lock.lock();
    try {
      running--;
      busy--;
      lastActivity = clock.instant();
      // Keep every running step and the newest ended ones; the store has the rest.
      int ended = 0;
      List<Integer> numbers = new ArrayList<>(steps.keySet());
      for (int i = numbers.size() - 1; i >= 0; i--) {
        LiveStep held = steps.get(numbers.get(i));
        if (held.isEnded() && ++ended > ENDED_STEPS_HELD) {
          steps.remove(numbers.get(i));
        }
      }
      changed.signalAll();
    } finally {
      lock.unlock();
    }
  }

  /** A file operation starts: the idle clock pauses until it ends. */
  void beginFileOperation(String runId) {
    lock.lock();
    try {
      if (ending) {
        throw ended(runId);
      }
      busy++;
      changed.signalAll();
    } finally {
      lock.unlock();
    }
  }

  /** A file operation ended, however: the idle clock restarts. */
  void endFileOperation() {
    lock.lock();
    try {
      busy--;
      lastActivity = clock.instant();
      changed.signalAll();
    } finally {
      lock.unlock();
    }
  }

  /**
   * A redactor for a step: the session's secrets, and from now on also {@code values} (a step's env
   * values join the session's redaction, for its later steps and its output as a whole).
   */
  Redactor redactorWith(Iterable<String> values) {
    lock.lock();
    try {
      values.forEach(secrets::add);
      return new Redactor(secrets);
    } finally {
      lock.unlock();
    }
  }

  /** Asks for a normal end; false when the session was already ending. */
  boolean requestEnd(SessionEnding ending) {
    lock.lock();
    try {
      if (this.ending) {
        return false;
      }
      this.requested = ending;
      this.ending = true;
      changed.signalAll();
      return true;
    } finally {
      lock.unlock();
    }
  }

  /** The session ends another way (its deadline, a failure, a kill): nothing new is accepted. */
  void markEnding() {
    lock.lock();
    try {
      ending = true;
      changed.signalAll();
    } finally {
      lock.unlock();
    }
  }

  boolean isEnding() {
    lock.lock();
    try {
      return ending;
    } finally {
      lock.unlock();
    }
  }

  /** How the session was asked to end normally, if it was. */
  Optional<SessionEnding> requested() {
    lock.lock();
    try {
      return Optional.ofNullable(requested);
    } finally {
      lock.unlock();
    }
  }

  /**
   * Waits until the idle clock runs out, or the session ends otherwise. When it runs out the
   * session is marked ending {@link SessionEnding#IDLE} under the lock, so no step can slip in
   * between.
   *
   * @return the last activity, when the session went idle; empty when it ended otherwise
   */
  Optional<Instant> awaitIdle() throws InterruptedException {
    lock.lock();
    try {
      while (!ending) {
        if (busy > 0) {
          changed.await();
          continue;
        }
        Instant idleAt = lastActivity.plusSeconds(idleSeconds);
        long left = Duration.between(clock.instant(), idleAt).toNanos();
        if (left <= 0) {
          requested = SessionEnding.IDLE;
          ending = true;
          changed.signalAll();
          return Optional.of(lastActivity);
        }
        changed.await(left, TimeUnit.NANOSECONDS);
      }
      return Optional.empty();
    } finally {
      lock.unlock();
    }
  }

  /**
   * When the session goes idle if nothing happens; null once it is ending. While something is busy
   * the clock is paused, so the soonest it can run out is {@code idleSeconds} from now.
   */
  Instant idleExpiresAt() {
    lock.lock();
    try {
      if (ending) {
        return null;
      }
      return (busy > 0 ? clock.instant() : lastActivity).plusSeconds(idleSeconds);
    } finally {
      lock.unlock();
    }
  }

  /** How many steps were started. */
  int stepsStarted() {
    lock.lock();
    try {
      return started;
    } finally {
      lock.unlock();
    }
  }

  /** A step held in memory (running, or among the newest ended). */
  Optional<LiveStep> held(int number) {
    lock.lock();
    try {
      return Optional.ofNullable(steps.get(number));
    } finally {
      lock.unlock();
    }
  }

  /**
   * The steps whose result is not recorded yet: the running ones, and those that ended but are
   * still waiting for their decisions or writing their rows ({@link SessionSteps}).
   */
  List<LiveStep> unrecordedSteps() {
    lock.lock();
    try {
      List<LiveStep> out = new ArrayList<>();
      for (LiveStep step : steps.values()) {
        if (!step.ended.isDone()) {
          out.add(step);
        }
      }
      return out;
    } finally {
      lock.unlock();
    }
  }

  /** The steps running now. */
  List<LiveStep> runningSteps() {
    lock.lock();
    try {
      List<LiveStep> out = new ArrayList<>();
      for (LiveStep step : steps.values()) {
        if (!step.isEnded()) {
          out.add(step);
        }
      }
      return out;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Waits, at most {@code settle}, until a decision the proxy made after {@code at} has reached the
   * session. The proxy's decisions come in the order it wrote them, so once one made after {@code
   * at} is here every decision written before it is too: a step that ended at {@code at} has all of
   * its own. When none comes (the usual case: nothing else is talking) the whole {@code settle} is
   * waited, which bounds how late a decision may be and still make the step's answer.
   *
   * @return whether the stream passed {@code at} (false: the time ran out first)
   */
  boolean awaitDecisionsPast(Instant at, Duration settle) throws InterruptedException {
    long left = settle.toNanos();
    lock.lock();
    try {
      while (!newestDecision.isAfter(at)) {
        if (left <= 0) {
          return false;
        }
        left = changed.awaitNanos(left);
      }
      return true;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Attributes one proxy decision to the steps that were running when the proxy made it, by its own
   * {@code time} (else now): running steps started by then, and held ended steps whose run covers
   * it (a decision reported just after its step ended). Returns their numbers, for the decision's
   * audit row.
   */
  List<Integer> attribute(DecisionRecord decision) {
    // The proxy's own time, read and checked with the decision (DecisionRecord.read).
    Instant at = decision.time();
    List<Integer> numbers = new ArrayList<>();
    lock.lock();
    try {
      if (at.isAfter(newestDecision)) {
        newestDecision = at;
        changed.signalAll();
      }
      for (LiveStep step : steps.values()) {
        if (step.ranAt(at)) {
          step.addDecision(decision);
          numbers.add(step.number);
        }
      }
    } finally {
      lock.unlock();
    }
    return numbers;
  }
}
