package dev.agentsandbox.store;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Instant;
import java.util.Objects;

/** One saved version of a configuration document. */
public record StoredConfig(
    String key, long version, JsonNode document, Instant updatedAt, String updatedBy) {

  public StoredConfig {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(document, "document");
    Objects.requireNonNull(updatedAt, "updatedAt");
    Objects.requireNonNull(updatedBy, "updatedBy");
    if (version < 1) {
      throw new IllegalArgumentException("configuration version must be at least 1: " + version);
    }
    document = document.deepCopy();
  }
}
