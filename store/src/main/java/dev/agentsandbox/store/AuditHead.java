package dev.agentsandbox.store;

import java.util.Objects;

/**
 * The newest row of the audit chain as (id, hash). Recorded outside the database (a log shipper, a
 * ticket, a second system), it lets {@link AuditLog#verify(AuditHead)} detect deletion of the
 * newest rows, which the chain alone cannot.
 */
public record AuditHead(long id, String hash) {

  public AuditHead {
    Objects.requireNonNull(hash, "hash");
    if (id < 0) {
      throw new IllegalArgumentException("audit head id must not be negative: " + id);
    }
  }

  /** Parses the {@code id:hash} form printed by {@link #toString()}. */
  public static AuditHead parse(String text) {
    int colon = text.indexOf(':');
    if (colon <= 0 || colon == text.length() - 1) {
      throw new IllegalArgumentException(
          "audit head " + text + " is not of the form <id>:<sha256 hex>");
    }
    try {
      return new AuditHead(Long.parseLong(text.substring(0, colon)), text.substring(colon + 1));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "audit head " + text + " is not of the form <id>:<sha256 hex>", e);
    }
  }

  @Override
  public String toString() {
    return id + ":" + hash;
  }
}
