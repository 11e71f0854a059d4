package dev.agentsandbox.runs.session;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * One step of a session: running, or its result. A summary (from a listing) has no output tails and
 * no decisions ({@link #output()} empty).
 *
 * @param runId the session's run id
 * @param step its number in the session, from 1
 * @param command its argument vector, secrets redacted
 * @param cwd the folder it started in ({@code /workspace/...})
 * @param background whether it was started in the background
 * @param timeoutSeconds its time-out, as it applied (never past the session's deadline)
 * @param stdinBytes how many bytes it was given on its standard input
 * @param startedAt when it started
 * @param endedAt when it ended; null while it runs
 * @param durationMs how long it ran; null while it runs
 * @param end how it ended; empty while it runs
 * @param exitStatus the command's exit status when it had one (128 + the signal when killed)
 * @param outputBytes how many bytes it wrote in all, both streams
 * @param egressDenied how many connections the run's proxy refused while it ran
 * @param detail a note on how it ended (what failed); empty when there is none
 * @param output its output and decisions; empty in a summary
 */
public record StepView(
    String runId,
    int step,
    List<String> command,
    String cwd,
    boolean background,
    int timeoutSeconds,
    long stdinBytes,
    Instant startedAt,
    Instant endedAt,
    Long durationMs,
    Optional<StepEndReason> end,
    Integer exitStatus,
    long outputBytes,
    int egressDenied,
    String detail,
    Optional<Output> output) {
  public StepView {
    Objects.requireNonNull(runId, "runId");
    command = List.copyOf(command);
    Objects.requireNonNull(cwd, "cwd");
    Objects.requireNonNull(startedAt, "startedAt");
    Objects.requireNonNull(end, "end");
    Objects.requireNonNull(detail, "detail");
    Objects.requireNonNull(output, "output");
  }

  /** Whether the step has not ended. */
  public boolean running() {
    return end.isEmpty();
  }

  /**
   * What a step wrote and what its proxy decided while it ran.
   *
   * @param stdout the redacted end of its standard output (the newest 64 KiB; the newest 16 KiB
   *     when read from the store)
   * @param stderr the redacted end of its standard error, the same way
   * @param truncated whether the tails lack the start of what it wrote
   * @param egress the decisions the run's proxy made while it ran, oldest first (at most 100), each
   *     a plain tree as a run's {@code egress} lists it
   */
  public record Output(
      String stdout, String stderr, boolean truncated, List<Map<String, Object>> egress) {
    public Output {
      Objects.requireNonNull(stdout, "stdout");
      Objects.requireNonNull(stderr, "stderr");
      egress = List.copyOf(egress);
    }
  }
}
