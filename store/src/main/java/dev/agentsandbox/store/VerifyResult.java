package dev.agentsandbox.store;

import java.util.List;

/** Outcome of checking the audit chain; each problem names the row it concerns. */
public record VerifyResult(boolean ok, long rowsChecked, List<String> problems) {

  public VerifyResult {
    problems = List.copyOf(problems);
    if (ok != problems.isEmpty()) {
      throw new IllegalArgumentException("a verify result is ok exactly when it has no problems");
    }
  }
}
