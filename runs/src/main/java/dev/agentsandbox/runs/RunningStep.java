package dev.agentsandbox.runs;

import dev.agentsandbox.runs.session.StepView;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A step that has started, as the API follows it: its redacted output as it comes, the decisions
 * attributed to it so far, and its result once recorded. The step goes on whatever its follower
 * does; a follower that goes away says so ({@link #clientGone()}), for the step's audit row.
 * Thread-safe.
 */
public final class RunningStep {
  private final String runId;
  private final LiveStep step;

  RunningStep(String runId, LiveStep step) {
    this.runId = runId;
    this.step = step;
  }

  public String runId() {
    return runId;
  }

  public int number() {
    return step.number;
  }

  /** Both streams of the step's output, redacted line by line, in the order their lines ended. */
  public RunOutput output() {
    return step.combined;
  }

  /** The decisions attributed to the step from the {@code from}-th on (oldest first). */
  public List<java.util.Map<String, Object>> decisionsFrom(int from) {
    List<java.util.Map<String, Object>> all = step.decisionTrees();
    return from >= all.size() ? List.of() : all.subList(from, all.size());
  }

  /** Whether the step's result is recorded. */
  public boolean ended() {
    return step.ended.isDone();
  }

  /**
   * Waits for the step's result (its store row and audit row written).
   *
   * @throws RunException when recording it failed
   */
  public StepView await() throws InterruptedException {
    try {
      return step.ended.get();
    } catch (ExecutionException e) {
      throw new RunException(
          "recording step " + step.number + " of " + runId + ": " + e.getCause().getMessage(), e);
    }
  }

  /** The result, when it is recorded within {@code wait}. */
  public Optional<StepView> await(Duration wait) throws InterruptedException {
    try {
      return Optional.of(step.ended.get(wait.toMillis(), TimeUnit.MILLISECONDS));
    } catch (TimeoutException e) {
      return Optional.empty();
    } catch (ExecutionException e) {
      throw new RunException(
          "recording step " + step.number + " of " + runId + ": " + e.getCause().getMessage(), e);
    }
  }

  /** The follower went away before the result; the step goes on and its row says so. */
  public void clientGone() {
    step.clientGone();
  }
}
