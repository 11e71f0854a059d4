package dev.agentsandbox.store;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.store.internal.Columns;
import java.time.Instant;
import java.util.Objects;

/**
 * One step of a session as stored: what was asked (already redacted), when it ran, and how it
 * ended. A step is stored when it starts and updated once when it ends; {@link #endedAt()} is null
 * while it runs. Times are truncated to the millisecond, which is what the store keeps.
 *
 * @param runId the session's run id
 * @param step the step's number in its session, from 1
 * @param actor the token that asked for it
 * @param command the argument vector, secrets redacted
 * @param cwd the folder it started in, as the workload sees it ({@code /workspace/...})
 * @param background whether it was started in the background
 * @param timeoutSeconds its time-out
 * @param stdinBytes how many bytes it was given on its standard input
 * @param startedAt when it was started
 * @param endedAt when it ended; null while it runs
 * @param endReason how it ended ({@code exit}, {@code timeout}, {@code killed}, {@code
 *     session_ended}, {@code error}); null while it runs
 * @param exitStatus the command's exit status when it had one
 * @param durationMs how long it ran, in milliseconds; null while it runs
 * @param outputBytes how many bytes it wrote to its standard output and error in all
 * @param stdoutTail the redacted end of its standard output as stored (null when not read)
 * @param stderrTail the redacted end of its standard error as stored (null when not read)
 * @param outputTruncated whether the stored tails lack the start of what it wrote
 * @param egressDenied how many connections the run's proxy refused while it ran
 * @param detail a note on how it ended (what failed), empty when there is none
 */
public record StepRecord(
    String runId,
    int step,
    String actor,
    JsonNode command,
    String cwd,
    boolean background,
    int timeoutSeconds,
    long stdinBytes,
    Instant startedAt,
    Instant endedAt,
    String endReason,
    Integer exitStatus,
    Long durationMs,
    long outputBytes,
    String stdoutTail,
    String stderrTail,
    boolean outputTruncated,
    int egressDenied,
    String detail) {

  public StepRecord {
    Objects.requireNonNull(runId, "runId");
    Objects.requireNonNull(actor, "actor");
    Objects.requireNonNull(command, "command");
    Objects.requireNonNull(cwd, "cwd");
    Objects.requireNonNull(startedAt, "startedAt");
    Objects.requireNonNull(detail, "detail");
    if (step < 1) {
      throw new IllegalArgumentException("a step's number is at least 1: " + step);
    }
    if ((endedAt == null) != (endReason == null) || (endedAt == null) != (durationMs == null)) {
      throw new IllegalArgumentException(
          "step "
              + step
              + ": an ended step has an end time, a reason and a duration; a running"
              + " one has none");
    }
    command = command.deepCopy();
    startedAt = Columns.millis(startedAt);
    endedAt = Columns.millis(endedAt);
  }

  /** A step that has just started. */
  public static StepRecord started(
      String runId,
      int step,
      String actor,
      JsonNode command,
      String cwd,
      boolean background,
      int timeoutSeconds,
      long stdinBytes,
      Instant at) {
    return new StepRecord(
        runId,
        step,
        actor,
        command,
        cwd,
        background,
        timeoutSeconds,
        stdinBytes,
        at,
        null,
        null,
        null,
        null,
        0,
        "",
        "",
        false,
        0,
        "");
  }

  /** Whether the step has not ended. */
  public boolean running() {
    return endedAt == null;
  }

  /** This step once it ended. */
  public StepRecord ended(
      Instant at,
      String reason,
      Integer exit,
      long duration,
      long output,
      String stdout,
      String stderr,
      boolean truncated,
      int denied,
      String note) {
    return new StepRecord(
        runId,
        step,
        actor,
        command,
        cwd,
        background,
        timeoutSeconds,
        stdinBytes,
        startedAt,
        at,
        reason,
        exit,
        duration,
        output,
        stdout,
        stderr,
        truncated,
        denied,
        note);
  }
}
