package dev.agentsandbox.policy.event;

import java.util.Map;
import java.util.Objects;

/**
 * {@code agent_sandbox.timeout}: the deadline ended the run.
 *
 * @param ttlSeconds the time to live that ran out
 * @param detail what the backend said
 */
public record TimedOut(long ttlSeconds, String detail) implements RunEvent {
  public TimedOut {
    Objects.requireNonNull(detail, "detail");
  }

  @Override
  public EventType type() {
    return EventType.TIMEOUT;
  }

  @Override
  public Map<String, Object> toTree() {
    return Fields.tree().put("ttl_seconds", ttlSeconds).put("detail", detail).build();
  }

  static TimedOut read(Object data) {
    Fields f = Fields.of(EventType.TIMEOUT, data);
    TimedOut timeout = new TimedOut(f.whole("ttl_seconds"), f.string("detail", ""));
    f.done();
    return timeout;
  }
}
