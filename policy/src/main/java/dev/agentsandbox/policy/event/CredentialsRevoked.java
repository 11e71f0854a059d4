package dev.agentsandbox.policy.event;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * {@code agent_sandbox.credentials.revoke}: what became of each credential of the run when it was
 * revoked — when the workload stopped, when a restarted control plane recovered the run, or when a
 * later pass revoked a run token an earlier attempt could not.
 *
 * @param stage when the revocation happened
 * @param credentials each credential and what became of it
 */
public record CredentialsRevoked(Stage stage, List<Revocation> credentials) implements RunEvent {

  /** When credentials were revoked. */
  public enum Stage {
    /** The workload stopped (or never started). */
    RUN("run"),
    /** A control plane found the run left live by a previous life and ended it. */
    RECOVERY("recovery"),
    /** A reaper pass revoked a run token of a run that is over. */
    SWEEP("sweep");

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

  public CredentialsRevoked {
    java.util.Objects.requireNonNull(stage, "stage");
    credentials = List.copyOf(credentials);
  }

  /** The credentials that still work until their expiry. */
  public List<Revocation> live() {
    return credentials.stream().filter(Revocation::live).toList();
  }

  @Override
  public EventType type() {
    return EventType.CREDENTIALS_REVOKE;
  }

  @Override
  public Map<String, Object> toTree() {
    return Fields.tree()
        .put("stage", stage.wireName())
        .put("credentials", credentials.stream().map(Revocation::toTree).toList())
        .build();
  }

  static CredentialsRevoked read(Object data) {
    Fields f = Fields.of(EventType.CREDENTIALS_REVOKE, data);
    CredentialsRevoked revoked =
        new CredentialsRevoked(
            f.named("stage", Stage::fromWireName, Stage.RUN),
            f.objects("credentials", Revocation::read));
    f.done();
    return revoked;
  }
}
