package dev.agentsandbox.policy.event;

import java.util.Map;
import java.util.Objects;

/**
 * {@code agent_sandbox.runtime_mismatch}: the sandbox was not under the isolation it was launched
 * for, so its command never ran.
 *
 * @param backend the run's backend
 * @param expectedRuntime the runtime it was launched for
 * @param message what the check found
 */
public record RuntimeMismatched(String backend, String expectedRuntime, String message)
    implements RunEvent {
  public RuntimeMismatched {
    Objects.requireNonNull(backend, "backend");
    Objects.requireNonNull(expectedRuntime, "expectedRuntime");
    Objects.requireNonNull(message, "message");
  }

  @Override
  public EventType type() {
    return EventType.RUNTIME_MISMATCH;
  }

  @Override
  public Map<String, Object> toTree() {
    return Fields.tree()
        .put("backend", backend)
        .put("expected_runtime", expectedRuntime)
        .put("message", message)
        .build();
  }

  static RuntimeMismatched read(Object data) {
    Fields f = Fields.of(EventType.RUNTIME_MISMATCH, data);
    RuntimeMismatched event =
        new RuntimeMismatched(
            f.string("backend"), f.string("expected_runtime"), f.string("message", ""));
    f.done();
    return event;
  }
}
