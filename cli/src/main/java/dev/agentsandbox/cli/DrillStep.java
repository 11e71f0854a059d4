package dev.agentsandbox.cli;

import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * One hostile step of the drill: what it tries, the run request that tries it, and how each layer's
 * refusal is judged from what was observed. Judging is pure, so {@code drill verify} can judge a
 * transcript again.
 *
 * @param name a stable name, the key in the transcript
 * @param attack what the step tries, in words
 * @param command the workload's command
 * @param env the workload's environment (a step that tries to undo the fence by environment)
 * @param refusedByApi whether the API is expected to refuse the request before anything runs
 * @param judge the checks, one per layer, from what was observed
 */
record DrillStep(
    String name,
    String attack,
    List<String> command,
    Map<String, String> env,
    boolean refusedByApi,
    Function<DrillObservation, List<DrillCheck>> judge) {
  DrillStep {
    command = List.copyOf(command);
    env = Map.copyOf(env);
  }

  /** Whether every check held. */
  static boolean held(List<DrillCheck> checks) {
    return !checks.isEmpty() && checks.stream().allMatch(DrillCheck::held);
  }
}
