package dev.agentsandbox.policy.event;

import java.time.Instant;
import java.util.Map;
import java.util.Objects;

/**
 * {@code agent_sandbox.idle}: a session had no step running and no file operation for its idle
 * time, written before it is ended; the session then ends {@code idle}.
 *
 * @param idleSeconds its idle time
 * @param lastActivity when its last step or file operation ended (or it was opened)
 */
public record SessionIdled(long idleSeconds, Instant lastActivity) implements RunEvent {
  public SessionIdled {
    if (idleSeconds < 1) {
      throw new IllegalArgumentException("an idle time is at least a second");
    }
    Objects.requireNonNull(lastActivity, "lastActivity");
  }

  @Override
  public EventType type() {
    return EventType.IDLE;
  }

  @Override
  public Map<String, Object> toTree() {
    return Fields.tree()
        .put("idle_seconds", idleSeconds)
        .put("last_activity", lastActivity.toString())
        .build();
  }

  static SessionIdled read(Object data) {
    Fields f = Fields.of(EventType.IDLE, data);
    long idle = f.whole("idle_seconds");
    Instant last = f.instant("last_activity");
    if (f.has("idle_seconds") && idle < 1) {
      f.problem("idle_seconds", "is not an idle time");
    }
    f.done();
    return new SessionIdled(idle, last);
  }
}
