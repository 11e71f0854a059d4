package dev.agentsandbox.policy.event;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * {@code agent_sandbox.exec}: a session's step ended (docs/api.md, "Audit rows of a session").
 *
 * @param step the step's number
 * @param command the command, secrets redacted
 * @param cwd the folder it ran in
 * @param end how it ended: {@code exit}, {@code timeout}, {@code killed}, {@code session_ended} or
 *     {@code error}
 * @param exitStatus its exit status, when the backend read one ({@code null} in the row otherwise)
 * @param durationMs how long it ran
 * @param outputBytes how many bytes it wrote in all
 * @param stdinBytes how many bytes it was given on standard input
 * @param egressDenied how many refusals the proxy reported while it ran
 * @param detail how it ended when not by its own exit (what failed; that the client went away)
 */
public record StepEnded(
    int step,
    List<String> command,
    String cwd,
    String end,
    Optional<Integer> exitStatus,
    long durationMs,
    long outputBytes,
    long stdinBytes,
    long egressDenied,
    Optional<String> detail)
    implements RunEvent {
  public StepEnded {
    if (step < 1) {
      throw new IllegalArgumentException("steps are numbered from 1");
    }
    command = List.copyOf(command);
    Objects.requireNonNull(cwd, "cwd");
    Objects.requireNonNull(end, "end");
    Objects.requireNonNull(exitStatus, "exitStatus");
    Objects.requireNonNull(detail, "detail");
  }

  @Override
  public EventType type() {
    return EventType.EXEC;
  }

  @Override
  public Map<String, Object> toTree() {
    return Fields.tree()
        .put("step", step)
        .put("command", command)
        .put("cwd", cwd)
        .put("end", end)
        .put("exit_status", exitStatus.orElse(null))
        .put("duration_ms", durationMs)
        .put("output_bytes", outputBytes)
        .put("stdin_bytes", stdinBytes)
        .put("egress_denied", egressDenied)
        .putIfPresent("detail", detail)
        .build();
  }

  static StepEnded read(Object data) {
    Fields f = Fields.of(EventType.EXEC, data);
    int step = f.integer("step");
    if (f.has("step") && step < 1) {
      f.problem("step", "is not a step number");
    }
    List<String> command = f.strings("command");
    String cwd = f.string("cwd");
    String end = f.string("end");
    Optional<Integer> exit = f.optionalInteger("exit_status");
    long duration = f.whole("duration_ms");
    long output = f.whole("output_bytes");
    long stdin = f.whole("stdin_bytes");
    long denied = f.whole("egress_denied");
    Optional<String> detail = f.optionalString("detail");
    f.done();
    return new StepEnded(step, command, cwd, end, exit, duration, output, stdin, denied, detail);
  }
}
