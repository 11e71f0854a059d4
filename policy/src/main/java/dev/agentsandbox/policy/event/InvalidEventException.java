package dev.agentsandbox.policy.event;

import java.util.List;

/** An audit row of a known type whose data this vocabulary cannot read; names every problem. */
public final class InvalidEventException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  private final transient List<String> problems;

  InvalidEventException(String what, List<String> problems) {
    super("read " + what + ": " + String.join("; ", problems));
    this.problems = List.copyOf(problems);
  }

  /** Each problem, naming its field. */
  public List<String> problems() {
    return problems;
  }
}
