package dev.agentsandbox.backend.session;

import java.time.Instant;
import java.util.Optional;

/**
 * A started step. Thread-safety: {@link #kill()} may be called from any thread while another waits
 * in {@link #awaitEnd}; it is idempotent, and a no-op once the step has ended.
 */
public interface Step {
  /** The step's number in its session. */
  int number();

  /**
   * Waits until the step ends or {@code until} passes. Every chunk of its output has reached the
   * step's {@link StepListener} before this returns an end.
   *
   * @return how it ended, or empty when it was still running at {@code until}
   */
  Optional<StepEnd> awaitEnd(Instant until) throws InterruptedException;

  /**
   * Stops the step and every process it started (its process group, or everything the backend can
   * tell it started), without touching the session's other steps.
   */
  void kill();
}
