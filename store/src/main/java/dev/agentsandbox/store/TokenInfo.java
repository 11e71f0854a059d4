package dev.agentsandbox.store;

import dev.agentsandbox.policy.config.AgentGrant;
import java.time.Instant;
import java.util.Collections;
import java.util.Objects;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * What the store knows about a token: never its secret.
 *
 * @param agents the agents the token may see and touch ({@link AgentGrant#EVERY} when it is not
 *     limited)
 */
public record TokenInfo(
    String name,
    Set<String> scopes,
    AgentGrant agents,
    Instant createdAt,
    Instant expiresAt,
    Instant revokedAt) {

  public TokenInfo {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(agents, "agents");
    Objects.requireNonNull(createdAt, "createdAt");
    SortedSet<String> sorted = new TreeSet<>(scopes);
    scopes = Collections.unmodifiableSortedSet(sorted);
  }

  /** A token of every agent. */
  public TokenInfo(
      String name, Set<String> scopes, Instant createdAt, Instant expiresAt, Instant revokedAt) {
    this(name, scopes, AgentGrant.EVERY, createdAt, expiresAt, revokedAt);
  }

  /** Not revoked and not expired at {@code now}. */
  public boolean activeAt(Instant now) {
    return revokedAt == null && (expiresAt == null || now.isBefore(expiresAt));
  }
}
