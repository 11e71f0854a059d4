package dev.agentsandbox.store;

import java.time.Instant;
import java.util.Collections;
import java.util.Objects;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;

/** What the store knows about a token: never its secret. */
public record TokenInfo(
    String name, Set<String> scopes, Instant createdAt, Instant expiresAt, Instant revokedAt) {

  public TokenInfo {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(createdAt, "createdAt");
    SortedSet<String> sorted = new TreeSet<>(scopes);
    scopes = Collections.unmodifiableSortedSet(sorted);
  }

  /** Not revoked and not expired at {@code now}. */
  public boolean activeAt(Instant now) {
    return revokedAt == null && (expiresAt == null || now.isBefore(expiresAt));
  }
}
