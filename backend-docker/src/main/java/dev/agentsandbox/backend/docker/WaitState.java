package dev.agentsandbox.backend.docker;

import java.util.EnumSet;
import java.util.Set;

/**
 * Where the wait for a sandbox's workload stands. The workload needs its proxy (its only way out,
 * and the recorder of its every request), so the wait watches both and ends on whichever stops
 * first, or at the deadline; a stopped proxy is told apart from a daemon stopping both.
 *
 * <pre>
 * WATCHING ──── the workload stopped ──────────────────────▶ WORKLOAD_STOPPED
 *   │  │                                                         ▲      │ a SIGTERM/SIGKILL not ours, the proxy stopped too
 *   │  │                                                         │      ├──────────────────▶ STOPPED_FROM_OUTSIDE
 *   │  │                 the workload stopped too, or the proxy's │      │ otherwise
 *   │  │                 wait broke and the workload's tells      │      └──────────────────▶ EXITED
 *   │  └─ the proxy stopped ─▶ PROXY_STOPPED ────────────────────┘
 *   │                             │ the workload still runs ──────────────────────────────▶ PROXY_DIED
 *   │                             └ the workload's wait tells nothing within its grace ─────▶ LOST
 *   └─ the deadline passed ─────────────────────────────────────────────────────────────────▶ DEADLINE_PASSED
 * </pre>
 *
 * A kill on request stops the workload: the wait sees {@code WORKLOAD_STOPPED} and then {@code
 * EXITED}, and the sandbox answers {@code KILLED} because it sent the kill. A wait on a command
 * started in a running workload container (a warm sandbox's run, a session's) follows the same
 * table: the command's end is {@code WORKLOAD_STOPPED}.
 */
enum WaitState {
  /** Both are running and the deadline has not passed. */
  WATCHING,
  /** The proxy's wait ended first: did the proxy die under a running workload, or did both stop? */
  PROXY_STOPPED,
  /** The workload stopped (exited, was killed, or ran out of memory); its status is read next. */
  WORKLOAD_STOPPED,
  /** Ended: the workload exited; its status says how. */
  EXITED,
  /**
   * Ended: the workload and its proxy were stopped together by a signal this control plane did not
   * send (a daemon stopping or restarting stops every container; or someone by hand).
   */
  STOPPED_FROM_OUTSIDE,
  /** Ended: the proxy stopped while the workload ran; the workload is stopped. */
  PROXY_DIED,
  /** Ended: the deadline passed with the workload running; it is stopped. */
  DEADLINE_PASSED,
  /** Ended without an answer: the waits broke and the workload's state is unknown. */
  LOST;

  /** The states this one may move to: the whole transition table. */
  Set<WaitState> successors() {
    return switch (this) {
      case WATCHING -> EnumSet.of(WORKLOAD_STOPPED, PROXY_STOPPED, DEADLINE_PASSED);
      case PROXY_STOPPED -> EnumSet.of(PROXY_DIED, WORKLOAD_STOPPED, LOST);
      case WORKLOAD_STOPPED -> EnumSet.of(EXITED, STOPPED_FROM_OUTSIDE);
      case EXITED, STOPPED_FROM_OUTSIDE, PROXY_DIED, DEADLINE_PASSED, LOST ->
          EnumSet.noneOf(WaitState.class);
    };
  }

  /** Whether the wait has ended in this state. */
  boolean ended() {
    return successors().isEmpty();
  }

  /** Whether the workload may still be running in this end and is stopped before anything else. */
  boolean stopsTheWorkload() {
    return this == PROXY_DIED || this == DEADLINE_PASSED;
  }

  /** Whether the proxy stopped first: its state is read before the sandbox stops it itself. */
  boolean proxyFirst() {
    return this == PROXY_DIED;
  }

  /**
   * How a wait ended.
   *
   * @param state an ended state
   * @param status the workload's exit status, when it has one
   */
  record Outcome(WaitState state, java.util.OptionalInt status) {
    Outcome {
      if (!state.ended()) {
        throw new IllegalArgumentException("a wait does not end in " + state);
      }
      java.util.Objects.requireNonNull(status, "status");
    }
  }

  /**
   * One wait's way through the table; a move the table does not have is a bug and throws. Not
   * thread-safe: one waiting thread.
   */
  static final class Tracker {
    private WaitState state = WATCHING;

    WaitState state() {
      return state;
    }

    /** Moves to {@code next}, which must be a successor of the current state. */
    Tracker moveTo(WaitState next) {
      if (!state.successors().contains(next)) {
        throw new IllegalStateException("a wait cannot move from " + state + " to " + next);
      }
      state = next;
      return this;
    }
  }
}
