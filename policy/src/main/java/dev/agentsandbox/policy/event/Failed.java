package dev.agentsandbox.policy.event;

import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * {@code agent_sandbox.failure}: the run failed, at its launch, while it ran, or because the
 * control plane that owned it stopped.
 *
 * @param stage where it failed
 * @param message what failed, bounded
 */
public record Failed(Stage stage, String message) implements RunEvent {

  /** Where a run failed. */
  public enum Stage {
    /** The backend could not create the sandbox. */
    LAUNCH("launch"),
    /** The backend lost the workload, or the control plane stopped waiting for it. */
    RUN("run"),
    /** A restarted control plane found the run left live by its previous life. */
    RECOVERY("recovery");

    private final String wireName;

    Stage(String wireName) {
      this.wireName = wireName;
    }

    public String wireName() {
      return wireName;
    }

    static Optional<Stage> fromWireName(String text) {
      for (Stage s : values()) {
        if (s.wireName.equals(text)) {
          return Optional.of(s);
        }
      }
      return Optional.empty();
    }
  }

  public Failed {
    Objects.requireNonNull(stage, "stage");
    Objects.requireNonNull(message, "message");
  }

  @Override
  public EventType type() {
    return EventType.FAILURE;
  }

  @Override
  public Map<String, Object> toTree() {
    return Fields.tree().put("stage", stage.wireName()).put("message", message).build();
  }

  static Failed read(Object data) {
    Fields f = Fields.of(EventType.FAILURE, data);
    Failed failed =
        new Failed(f.named("stage", Stage::fromWireName, Stage.RUN), f.string("message", ""));
    f.done();
    return failed;
  }
}
