package dev.agentsandbox.runs;

import dev.agentsandbox.backend.session.Step;
import dev.agentsandbox.backend.session.StepListener;
import dev.agentsandbox.backend.session.WorkspacePath;
import dev.agentsandbox.policy.event.DecisionRecord;
import dev.agentsandbox.runs.session.StepEndReason;
import dev.agentsandbox.runs.session.StepView;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * One step of a live session: what was asked, its output as it comes (redacted with the session's
 * secrets and the step's own env values), the decisions attributed to it, and how it is being
 * stopped. Kill requests that arrive before the backend handed the step back are applied the moment
 * it does. Thread-safe.
 */
final class LiveStep {
  /** Most decisions one step's result lists. */
  static final int MAX_DECISIONS = 100;

  final int number;
  final String actor;
  final List<String> command;
  final WorkspacePath cwd;
  final boolean background;
  final int timeoutSeconds;
  final long stdinBytes;
  final Instant startedAt;
  final long startNanos;

  /** When the step is killed unless it ended; never past the session's deadline. */
  final Instant until;

  /** Whether {@link #until} is the session's deadline rather than the step's own time-out. */
  final boolean deadlineBound;

  final RunOutput combined;
  final RunOutput stdout;
  final RunOutput stderr;

  /** Completed with the step's result once it is recorded (store row and exec row written). */
  final CompletableFuture<StepView> ended = new CompletableFuture<>();

  private final List<DecisionRecord> egress = new ArrayList<>();
  private int denied;
  private Step handle;
  private boolean killRequested;
  private boolean timedOut;
  private boolean sessionEnding;
  private boolean clientGone;
  private Instant endedAt;

  LiveStep(
      int number,
      String actor,
      List<String> command,
      WorkspacePath cwd,
      boolean background,
      int timeoutSeconds,
      long stdinBytes,
      Instant startedAt,
      Instant until,
      boolean deadlineBound,
      RunOutput combined,
      RunOutput stdout,
      RunOutput stderr) {
    this.number = number;
    this.actor = actor;
    this.command = List.copyOf(command);
    this.cwd = cwd;
    this.background = background;
    this.timeoutSeconds = timeoutSeconds;
    this.stdinBytes = stdinBytes;
    this.startedAt = startedAt;
    this.startNanos = System.nanoTime();
    this.until = until;
    this.deadlineBound = deadlineBound;
    this.combined = combined;
    this.stdout = stdout;
    this.stderr = stderr;
  }

  /**
   * Where the backend delivers the step's output: each chunk to the combined and its own stream.
   */
  StepListener listener() {
    return new StepListener() {
      @Override
      public void onOutput(byte[] chunk) {
        combined.append(chunk);
        stdout.append(chunk);
      }

      @Override
      public void onErrorOutput(byte[] chunk) {
        combined.appendError(chunk);
        stderr.append(chunk);
      }
    };
  }

  synchronized void attach(Step started) {
    handle = started;
    if (killRequested || timedOut || sessionEnding) {
      started.kill();
    }
  }

  /** A {@code DELETE .../steps/{n}}: false when the step had already ended. */
  synchronized boolean requestKill() {
    if (endedAt != null) {
      return false;
    }
    killRequested = true;
    if (handle != null) {
      handle.kill();
    }
    return true;
  }

  /** Its time-out passed (or, when {@link #deadlineBound}, the session's deadline). */
  synchronized void timeOut() {
    if (deadlineBound) {
      sessionEnding = true;
    } else {
      timedOut = true;
    }
    if (handle != null) {
      handle.kill();
    }
  }

  /** The session is ending under it. */
  synchronized void endWithSession() {
    sessionEnding = true;
    if (handle != null) {
      handle.kill();
    }
  }

  /** The client that asked for it went away before its result; it goes on all the same. */
  synchronized void clientGone() {
    clientGone = true;
  }

  synchronized boolean wasClientGone() {
    return clientGone;
  }

  /**
   * Why the step ended, from what the backend saw and what was asked of it: an exit is an exit; a
   * kill is the time-out's, the kill request's, else the session's; a lost step is the session's
   * when the session was ending, else an error.
   */
  synchronized StepEndReason reason(dev.agentsandbox.backend.session.StepEnd.End seen) {
    return switch (seen) {
      case EXIT -> StepEndReason.EXIT;
      case KILLED -> {
        if (timedOut) {
          yield StepEndReason.TIMEOUT;
        }
        if (killRequested) {
          yield StepEndReason.KILLED;
        }
        // Nobody here asked: the backend stopped it because its sandbox is going (the SPI's kill
        // is only ever the time-out's, a kill request's or the session's).
        yield StepEndReason.SESSION_ENDED;
      }
      case ERROR -> sessionEnding ? StepEndReason.SESSION_ENDED : StepEndReason.ERROR;
    };
  }

  synchronized void markEnded(Instant at) {
    endedAt = at;
  }

  synchronized boolean isEnded() {
    return endedAt != null;
  }

  /** Whether a decision the proxy made at {@code at} was made while this step ran. */
  synchronized boolean ranAt(Instant at) {
    return !at.isBefore(startedAt) && (endedAt == null || !at.isAfter(endedAt));
  }

  synchronized void addDecision(DecisionRecord decision) {
    if (egress.size() < MAX_DECISIONS) {
      egress.add(decision);
    }
    if (!decision.allowed()) {
      denied++;
    }
  }

  synchronized List<DecisionRecord> decisions() {
    return List.copyOf(egress);
  }

  /** The decisions as a step's view lists them: each as its plain tree. */
  synchronized List<java.util.Map<String, Object>> decisionTrees() {
    return egress.stream().map(DecisionRecord::toTree).toList();
  }

  /**
   * The listed decisions and the refusal count read under one lock, so that a view never lists a
   * refusal its count misses (a decision attributed between two separate reads did).
   */
  private synchronized Decided decided() {
    return new Decided(decisionTrees(), denied);
  }

  private record Decided(List<java.util.Map<String, Object>> trees, int denied) {}

  synchronized int denied() {
    return denied;
  }

  /** The step as it is now: running, or with its end, exit status and detail. */
  StepView view(
      String runId,
      Optional<StepEndReason> end,
      Integer exitStatus,
      Long durationMs,
      Instant endedAt,
      String detail) {
    Decided decided = decided();
    return new StepView(
        runId,
        number,
        command,
        cwd.absolute(),
        background,
        timeoutSeconds,
        stdinBytes,
        startedAt,
        endedAt,
        durationMs,
        end,
        exitStatus,
        stdout.totalBytes() + stderr.totalBytes(),
        decided.denied(),
        detail,
        Optional.of(
            new StepView.Output(
                stdout.tail(),
                stderr.tail(),
                truncated(stdout) || truncated(stderr),
                decided.trees())));
  }

  /** Whether a stream's retained lines lack its start: lines left the tail, or one was cut. */
  static boolean truncated(RunOutput stream) {
    try {
      RunOutput.Chunk all = stream.read(0, 0);
      long kept = 0;
      for (String line : all.lines()) {
        kept += line.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
      }
      return all.skippedLines() > 0
          || kept > stream.tail().getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }
}
