package dev.agentsandbox.policy.event;

import java.util.Map;
import java.util.Objects;

/**
 * {@code agent_sandbox.teardown} with {@code "by": "reaper"}: the reaper removed what a run left
 * behind (a failed removal, a control plane that died).
 *
 * @param backend the backend whose resources were removed
 */
public record Reaped(String backend) implements RunEvent {
  /** The {@code by} of a reaper's teardown row. */
  static final String BY = "reaper";

  public Reaped {
    Objects.requireNonNull(backend, "backend");
  }

  @Override
  public EventType type() {
    return EventType.TEARDOWN;
  }

  /** The reaper writes a row only for what it removed. */
  public boolean removed() {
    return true;
  }

  @Override
  public Map<String, Object> toTree() {
    return Fields.tree().put("by", BY).put("backend", backend).put("removed", true).build();
  }

  static Reaped read(Object data) {
    Fields f = Fields.of(EventType.TEARDOWN, data);
    Reaped event = new Reaped(f.string("backend"));
    if (!f.bool("removed")) {
      f.problem("removed", "is false in a reaper's row");
    }
    f.done();
    return event;
  }
}
