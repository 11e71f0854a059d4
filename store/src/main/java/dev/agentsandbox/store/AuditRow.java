package dev.agentsandbox.store;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Instant;
import java.util.Objects;

/** One stored audit row with its place in the hash chain. */
public record AuditRow(
    long id,
    Instant time,
    String type,
    String actor,
    String agent,
    String runId,
    JsonNode data,
    String prevHash,
    String hash) {

  public AuditRow {
    Objects.requireNonNull(time, "time");
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(actor, "actor");
    Objects.requireNonNull(data, "data");
    Objects.requireNonNull(prevHash, "prevHash");
    Objects.requireNonNull(hash, "hash");
  }
}
