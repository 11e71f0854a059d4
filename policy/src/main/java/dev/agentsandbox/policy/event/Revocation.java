package dev.agentsandbox.policy.event;

import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What became of one credential of a run when it was revoked: revoked, left to expire (a JWT, a
 * command credential without a revoke command, a value the control plane no longer holds), or not
 * revoked because revoking failed. Never the value.
 *
 * @param name the credential's name in the agent's configuration
 * @param source {@code run-token}, {@code jwt} or {@code command}
 * @param outcome what became of it
 * @param expiresAt when it expires whatever happened
 * @param problem why it was not revoked, for {@link Outcome#EXPIRES} and {@link Outcome#FAILED}
 */
public record Revocation(
    String name, String source, Outcome outcome, Instant expiresAt, Optional<String> problem) {

  /** What became of a credential. */
  public enum Outcome {
    /** It no longer works. */
    REVOKED("revoked"),
    /** It cannot be revoked from here; it works until its expiry. */
    EXPIRES("expires"),
    /** Revoking it failed; it works until its expiry. */
    FAILED("failed");

    private final String wireName;

    Outcome(String wireName) {
      this.wireName = wireName;
    }

    public String wireName() {
      return wireName;
    }

    static Optional<Outcome> fromWireName(String text) {
      for (Outcome o : values()) {
        if (o.wireName.equals(text)) {
          return Optional.of(o);
        }
      }
      return Optional.empty();
    }
  }

  public Revocation {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(source, "source");
    Objects.requireNonNull(outcome, "outcome");
    Objects.requireNonNull(expiresAt, "expiresAt");
    Objects.requireNonNull(problem, "problem");
    if ((outcome == Outcome.REVOKED) != problem.isEmpty()) {
      throw new IllegalArgumentException("a credential not revoked says why, a revoked one not");
    }
  }

  /** Whether the credential still works until its expiry. */
  public boolean live() {
    return outcome != Outcome.REVOKED;
  }

  Map<String, Object> toTree() {
    return Fields.tree()
        .put("name", name)
        .put("source", source)
        .put("outcome", outcome.wireName())
        .put("expires_at", expiresAt.toString())
        .putIfPresent("problem", problem)
        .build();
  }

  static Revocation read(Fields f) {
    return new Revocation(
        f.string("name"),
        f.string("source"),
        f.named("outcome", Outcome::fromWireName, Outcome.FAILED),
        f.instant("expires_at"),
        f.optionalString("problem"));
  }
}
