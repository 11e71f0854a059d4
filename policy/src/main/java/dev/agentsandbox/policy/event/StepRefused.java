package dev.agentsandbox.policy.event;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * {@code agent_sandbox.exec.refused}: a session's step was refused before it got a number (a rule
 * it broke, {@code too_many_steps}, {@code run_ended}); the row's actor is who asked. Nothing ran.
 *
 * @param error the refusal's code, as the API answered it
 * @param message what was tried and why it was refused
 * @param command the command asked for, secrets redacted
 * @param envKeys the step's environment names, sorted; never the values
 */
public record StepRefused(String error, String message, List<String> command, List<String> envKeys)
    implements RunEvent {
  public StepRefused {
    Objects.requireNonNull(error, "error");
    Objects.requireNonNull(message, "message");
    command = List.copyOf(command);
    envKeys = List.copyOf(envKeys);
  }

  @Override
  public EventType type() {
    return EventType.EXEC_REFUSED;
  }

  @Override
  public Map<String, Object> toTree() {
    return Fields.tree()
        .put("error", error)
        .put("message", message)
        .put("command", command)
        .put("env_keys", envKeys)
        .build();
  }

  static StepRefused read(Object data) {
    Fields f = Fields.of(EventType.EXEC_REFUSED, data);
    StepRefused event =
        new StepRefused(
            f.string("error"),
            f.string("message"),
            f.stringsOrEmpty("command"),
            f.stringsOrEmpty("env_keys"));
    f.done();
    return event;
  }
}
