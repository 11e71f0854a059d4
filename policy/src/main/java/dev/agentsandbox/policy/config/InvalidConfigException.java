package dev.agentsandbox.policy.config;

import java.util.List;
import java.util.stream.Collectors;

/** A configuration document that does not validate; carries every problem with its JSON path. */
public final class InvalidConfigException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  @SuppressWarnings("serial") // records of strings; never serialized in practice
  private final List<ConfigProblem> problems;

  public InvalidConfigException(List<ConfigProblem> problems) {
    super(summary(problems));
    this.problems = List.copyOf(problems);
  }

  /** Every problem found, in document order. */
  public List<ConfigProblem> problems() {
    return problems;
  }

  private static String summary(List<ConfigProblem> problems) {
    return problems.size()
        + (problems.size() == 1 ? " problem: " : " problems: ")
        + problems.stream().map(ConfigProblem::toString).collect(Collectors.joining("; "));
  }
}
