package dev.agentsandbox.backend.session;

/**
 * Receives a step's output as it is produced. Backends call it from their own threads, one call at
 * a time per step and per method, in order; implementations must be thread-safe across methods and
 * must not block for long (one step's output never holds up another's).
 */
public interface StepListener {
  /** A chunk of the step's standard output. */
  void onOutput(byte[] chunk);

  /**
   * A chunk of the step's standard error, from a backend that keeps it apart; by default it joins
   * the output.
   */
  default void onErrorOutput(byte[] chunk) {
    onOutput(chunk);
  }
}
