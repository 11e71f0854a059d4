package dev.agentsandbox.server.governance;

import dev.agentsandbox.policy.config.ConfigProblem;
import java.util.List;

/**
 * The body of a change is not a change: not a JSON object, or its {@code version} or {@code reason}
 * field is malformed. The document itself is validated by {@code policy.config}.
 */
public final class InvalidChangeException extends GovernanceException {
  private static final long serialVersionUID = 1L;

  @SuppressWarnings("serial") // a list of records; never serialized in practice
  private final List<ConfigProblem> problems;

  public InvalidChangeException(String message, List<ConfigProblem> problems) {
    super(message);
    this.problems = List.copyOf(problems);
  }

  /** Each problem at its JSON path; empty when the body as a whole is wrong. */
  public List<ConfigProblem> problems() {
    return problems;
  }
}
