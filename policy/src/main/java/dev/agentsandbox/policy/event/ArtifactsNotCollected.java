package dev.agentsandbox.policy.event;

import java.util.Map;
import java.util.Objects;

/**
 * {@code agent_sandbox.artifacts} with {@code "collected": false}: why nothing of the run's outputs
 * was kept (no storage configured, the sandbox never launched, the backend does not collect, the
 * collection failed).
 *
 * @param reason why
 */
public record ArtifactsNotCollected(String reason) implements RunEvent {
  public ArtifactsNotCollected {
    Objects.requireNonNull(reason, "reason");
  }

  @Override
  public EventType type() {
    return EventType.ARTIFACTS;
  }

  @Override
  public Map<String, Object> toTree() {
    return Fields.tree().put("collected", false).put("reason", reason).build();
  }

  static ArtifactsNotCollected read(Object data) {
    Fields f = Fields.of(EventType.ARTIFACTS, data);
    ArtifactsNotCollected event = new ArtifactsNotCollected(f.string("reason", ""));
    f.done();
    return event;
  }
}
