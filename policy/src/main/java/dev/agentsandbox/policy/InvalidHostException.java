package dev.agentsandbox.policy;

/**
 * A host name or allow-list entry that the grammar refuses. The message is short, says what is
 * wrong and, where one exists, what to write instead; it never echoes more than a bounded prefix of
 * the input.
 */
public final class InvalidHostException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  /** Why the input was refused, so callers can map it to a decision reason or an error code. */
  public enum Problem {
    /** Not a well-formed host name (bad characters, empty or over-long labels, and so on). */
    INVALID,
    /** An IP address in any spelling; entries and targets are host names, never addresses. */
    IP_LITERAL
  }

  private final Problem problem;

  public InvalidHostException(Problem problem, String message) {
    super(message);
    this.problem = problem;
  }

  public Problem problem() {
    return problem;
  }
}
