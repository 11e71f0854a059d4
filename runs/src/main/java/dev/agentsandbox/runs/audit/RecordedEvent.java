package dev.agentsandbox.runs.audit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.policy.event.InvalidEventException;
import dev.agentsandbox.policy.event.RunEvent;
import dev.agentsandbox.store.AuditRow;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Objects;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * One audit row as it was recorded — its place in the log and its data exactly as stored (what its
 * hash covers) — read as the run event it is: the one reader of rows, for the store's rows ({@link
 * #of(AuditRow)}) and for the rows the API answers ({@link #fromJson}) alike.
 *
 * @param id the row's id in the chain
 * @param time when it was appended
 * @param type its row type
 * @param actor who did what it records
 * @param agent the agent, or null
 * @param runId the run, or null
 * @param data its data as stored, the store's {@code labels} included
 * @param hash its hash, or null where the source left it out (a timeline's events)
 * @param event the run event it reads as; empty for a row of another kind (a configuration change)
 *     or one that does not read ({@link #problem})
 * @param problem why a row of a run event's type does not read as one
 */
public record RecordedEvent(
    long id,
    Instant time,
    String type,
    String actor,
    String agent,
    String runId,
    JsonNode data,
    String hash,
    Optional<RunEvent> event,
    Optional<String> problem) {

  public RecordedEvent {
    Objects.requireNonNull(time, "time");
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(actor, "actor");
    data = data == null ? JsonNodeFactory.instance.objectNode() : data.deepCopy();
    Objects.requireNonNull(event, "event");
    Objects.requireNonNull(problem, "problem");
  }

  /** A row of the store. */
  public static RecordedEvent of(AuditRow row) {
    return read(
        row.id(),
        row.time(),
        row.type(),
        row.actor(),
        row.agent(),
        row.runId(),
        row.data(),
        row.hash());
  }

  /**
   * A row as the API answers it: {@code GET /audit}'s rows (with {@code agent}, {@code run_id} and
   * {@code hash}) or a timeline's {@code events} (without).
   *
   * @throws IllegalArgumentException when the row has no id, time, type or actor
   */
  public static RecordedEvent fromJson(JsonNode row) {
    if (!row.path("id").canConvertToLong()
        || !row.path("time").isTextual()
        || !row.path("type").isTextual()
        || !row.path("actor").isTextual()) {
      throw new IllegalArgumentException(
          "read an audit row: it lacks its id, time, type or actor (is this an audit row?)");
    }
    Instant time;
    try {
      time = Instant.parse(row.path("time").asText());
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException("read audit row " + row.path("id") + ": its time", e);
    }
    return read(
        row.path("id").asLong(),
        time,
        row.path("type").asText(),
        row.path("actor").asText(),
        row.path("agent").isTextual() ? row.path("agent").asText() : null,
        row.path("run_id").isTextual() ? row.path("run_id").asText() : null,
        row.path("data"),
        row.path("hash").isTextual() ? row.path("hash").asText() : null);
  }

  private static RecordedEvent read(
      long id,
      Instant time,
      String type,
      String actor,
      String agent,
      String runId,
      JsonNode data,
      String hash) {
    Optional<RunEvent> event;
    Optional<String> problem = Optional.empty();
    try {
      event = RunEvent.read(type, PlainJson.plain(data));
    } catch (InvalidEventException e) {
      event = Optional.empty();
      problem = Optional.of(e.getMessage());
    }
    return new RecordedEvent(id, time, type, actor, agent, runId, data, hash, event, problem);
  }

  /** The event, if the row is one of type {@code kind}. */
  public <T extends RunEvent> Optional<T> as(Class<T> kind) {
    return event.filter(kind::isInstance).map(kind::cast);
  }

  /** The run's labels the store copied into the row. */
  public SortedMap<String, String> labels() {
    SortedMap<String, String> labels = new TreeMap<>();
    data.path("labels").properties().forEach(e -> labels.put(e.getKey(), e.getValue().asText()));
    return labels;
  }

  /** The row's data without the store's labels, as stored otherwise. */
  public ObjectNode dataWithoutLabels() {
    ObjectNode copy =
        data.isObject() ? (ObjectNode) data.deepCopy() : JsonNodeFactory.instance.objectNode();
    copy.remove("labels");
    return copy;
  }
}
