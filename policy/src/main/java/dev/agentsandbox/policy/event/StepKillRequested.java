package dev.agentsandbox.policy.event;

import java.util.Map;
import java.util.Objects;

/**
 * {@code agent_sandbox.step.kill}: someone asked for one step of a session to be killed ({@code
 * DELETE .../steps/{n}}).
 *
 * @param step the step's number
 * @param requestedBy the token that asked
 */
public record StepKillRequested(int step, String requestedBy) implements RunEvent {
  public StepKillRequested {
    if (step < 1) {
      throw new IllegalArgumentException("steps are numbered from 1");
    }
    Objects.requireNonNull(requestedBy, "requestedBy");
  }

  @Override
  public EventType type() {
    return EventType.STEP_KILL;
  }

  @Override
  public Map<String, Object> toTree() {
    return Fields.tree().put("step", step).put("requested_by", requestedBy).build();
  }

  static StepKillRequested read(Object data) {
    Fields f = Fields.of(EventType.STEP_KILL, data);
    int step = f.integer("step");
    String by = f.string("requested_by");
    if (f.has("step") && step < 1) {
      f.problem("step", "is not a step number");
    }
    f.done();
    return new StepKillRequested(step, by);
  }
}
