package dev.agentsandbox.runs;

import java.util.List;
import java.util.Objects;

/**
 * A run or a session was refused before anything was created, and an {@code agent_sandbox.refused}
 * row says so; or a session's step was refused before it got a number ({@code env_refused}), and an
 * {@code agent_sandbox.exec.refused} row says so.
 */
public class RunRefusedException extends RunException {
  private static final long serialVersionUID = 1L;

  private final Refusal refusal;
  private final List<String> problems;

  public RunRefusedException(Refusal refusal, String message, List<String> problems) {
    super(message);
    this.refusal = Objects.requireNonNull(refusal, "refusal");
    this.problems = List.copyOf(problems);
  }

  /** Why. */
  public Refusal refusal() {
    return refusal;
  }

  /** Each problem found, for refusals that can have several (env keys, backend attempts). */
  public List<String> problems() {
    return problems;
  }
}
