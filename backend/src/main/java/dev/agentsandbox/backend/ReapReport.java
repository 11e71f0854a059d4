package dev.agentsandbox.backend;

import java.util.List;

/**
 * What one pass of a backend's reaper removed.
 *
 * @param removedRunIds the runs whose leftover resources were removed
 * @param problems resources that could not be removed, each with the reason
 */
public record ReapReport(List<String> removedRunIds, List<String> problems) {
  public ReapReport {
    removedRunIds = List.copyOf(removedRunIds);
    problems = List.copyOf(problems);
  }
}
