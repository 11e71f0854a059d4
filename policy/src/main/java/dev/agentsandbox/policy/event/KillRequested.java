package dev.agentsandbox.policy.event;

import java.util.Map;
import java.util.Objects;

/**
 * {@code agent_sandbox.kill}: someone asked for the run to stop, written before it is asked.
 *
 * @param requestedBy the token that asked
 */
public record KillRequested(String requestedBy) implements RunEvent {
  public KillRequested {
    Objects.requireNonNull(requestedBy, "requestedBy");
  }

  @Override
  public EventType type() {
    return EventType.KILL;
  }

  @Override
  public Map<String, Object> toTree() {
    return Fields.tree().put("requested_by", requestedBy).build();
  }

  static KillRequested read(Object data) {
    Fields f = Fields.of(EventType.KILL, data);
    KillRequested kill = new KillRequested(f.string("requested_by"));
    f.done();
    return kill;
  }
}
