package dev.agentsandbox.policy.event;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * {@code agent_sandbox.exec.start}: a session's step is about to start (docs/api.md, "Audit rows of
 * a session"); the row's actor is who asked.
 *
 * @param step the step's number in its session, from 1
 * @param command the command, secrets redacted
 * @param cwd the folder it runs in, under {@code /workspace}
 * @param envKeys the step's own environment names, sorted; never the values
 * @param stdinBytes how many bytes it reads on standard input
 * @param background whether it was started in the background
 * @param timeoutSeconds its time-out
 */
public record StepStarted(
    int step,
    List<String> command,
    String cwd,
    List<String> envKeys,
    long stdinBytes,
    boolean background,
    long timeoutSeconds)
    implements RunEvent {
  public StepStarted {
    if (step < 1) {
      throw new IllegalArgumentException("steps are numbered from 1");
    }
    command = List.copyOf(command);
    Objects.requireNonNull(cwd, "cwd");
    envKeys = List.copyOf(envKeys);
  }

  @Override
  public EventType type() {
    return EventType.EXEC_START;
  }

  @Override
  public Map<String, Object> toTree() {
    return Fields.tree()
        .put("step", step)
        .put("command", command)
        .put("cwd", cwd)
        .put("env_keys", envKeys)
        .put("stdin_bytes", stdinBytes)
        .put("background", background)
        .put("timeout_seconds", timeoutSeconds)
        .build();
  }

  static StepStarted read(Object data) {
    Fields f = Fields.of(EventType.EXEC_START, data);
    int step = f.integer("step");
    List<String> command = f.strings("command");
    String cwd = f.string("cwd");
    List<String> envKeys = f.stringsOrEmpty("env_keys");
    long stdin = f.whole("stdin_bytes");
    boolean background = f.bool("background");
    long timeout = f.whole("timeout_seconds");
    if (f.has("step") && step < 1) {
      f.problem("step", "is not a step number");
    }
    f.done();
    return new StepStarted(step, command, cwd, envKeys, stdin, background, timeout);
  }
}
