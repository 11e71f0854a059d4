package dev.agentsandbox.policy.event;

import java.util.Map;
import java.util.Objects;

/**
 * {@code agent_sandbox.close}: someone asked for a session to be closed ({@code DELETE
 * .../runs/{id}}), written before it is; the session then ends {@code closed}.
 *
 * @param requestedBy the token that asked
 * @param runningSteps how many of its steps were running then (each ends {@code session_ended})
 */
public record SessionClosed(String requestedBy, long runningSteps) implements RunEvent {
  public SessionClosed {
    Objects.requireNonNull(requestedBy, "requestedBy");
    if (runningSteps < 0) {
      throw new IllegalArgumentException("running steps cannot be negative");
    }
  }

  @Override
  public EventType type() {
    return EventType.CLOSE;
  }

  @Override
  public Map<String, Object> toTree() {
    return Fields.tree()
        .put("requested_by", requestedBy)
        .put("running_steps", runningSteps)
        .build();
  }

  static SessionClosed read(Object data) {
    Fields f = Fields.of(EventType.CLOSE, data);
    SessionClosed event = new SessionClosed(f.string("requested_by"), f.whole("running_steps"));
    f.done();
    return event;
  }
}
