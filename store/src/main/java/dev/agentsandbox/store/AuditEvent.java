package dev.agentsandbox.store;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.util.Objects;

/**
 * What a caller asks the audit log to record; {@code agent} and {@code runId} may be null, a null
 * {@code data} is stored as an empty object.
 */
public record AuditEvent(String type, String actor, String agent, String runId, JsonNode data) {

  /** Every row type is in the {@code agent_sandbox.} namespace. */
  public static final String TYPE_PREFIX = "agent_sandbox.";

  public AuditEvent {
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(actor, "actor");
    if (!type.startsWith(TYPE_PREFIX) || type.length() == TYPE_PREFIX.length()) {
      throw new IllegalArgumentException(
          "audit row type " + type + " is not in the " + TYPE_PREFIX + "* namespace");
    }
    if (actor.isBlank()) {
      throw new IllegalArgumentException("audit row actor must not be blank");
    }
    data = data == null ? JsonNodeFactory.instance.objectNode() : data.deepCopy();
  }
}
