package dev.agentsandbox.cli.drill;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.policy.event.EgressRecorded;
import dev.agentsandbox.policy.event.InvalidEventException;
import dev.agentsandbox.policy.event.RunEvent;
import dev.agentsandbox.runs.audit.PlainJson;
import dev.agentsandbox.runs.audit.RecordedEvent;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the drill saw of one step, from the API alone: the run's end, its redacted output, its
 * proxy's decisions and its audit rows; or, for a request the API was expected to refuse, the
 * answer. Every field is as the server reported it, so {@code drill verify} can judge it again.
 *
 * @param runId the run, or null when the API refused the request
 * @param status the run's final status ({@code exited}, {@code deadline}...), or null
 * @param end why it ended, or null
 * @param exitStatus the workload's exit status, or null
 * @param output the run's redacted output tail, at most {@link #MAX_OUTPUT} characters
 * @param egress the decisions of the run's proxy
 * @param audit the audit rows the judgement relies on, as the log holds them
 * @param refusal the API's answer to a request it was expected to refuse, or null
 * @param peer for a step that attacks another live sandbox, what was seen of that sandbox's run
 *     (the target, started by the drill first), else null
 */
record DrillObservation(
    String runId,
    String status,
    String end,
    Integer exitStatus,
    String output,
    List<Decision> egress,
    List<AuditRef> audit,
    Refusal refusal,
    DrillObservation peer) {
  /** How much output a transcript keeps per step; the steps' scripts print far less. */
  static final int MAX_OUTPUT = 8192;

  private static final Pattern MARKER = Pattern.compile("([a-z][a-z0-9-]*)=(\\S*)");

  DrillObservation {
    output = output == null ? "" : truncate(output);
    egress = egress == null ? List.of() : List.copyOf(egress);
    audit = audit == null ? List.of() : List.copyOf(audit);
  }

  /** What was seen of a step that involves one run alone (or none). */
  DrillObservation(
      String runId,
      String status,
      String end,
      Integer exitStatus,
      String output,
      List<Decision> egress,
      List<AuditRef> audit,
      Refusal refusal) {
    this(runId, status, end, exitStatus, output, egress, audit, refusal, null);
  }

  /** The same, with what was seen of the other live sandbox the step attacked. */
  DrillObservation withPeer(DrillObservation target) {
    return new DrillObservation(
        runId, status, end, exitStatus, output, egress, audit, refusal, target);
  }

  /** The audit rows this observation cites, the peer's included. */
  List<AuditRef> cited() {
    List<AuditRef> all = new ArrayList<>(audit);
    if (peer != null) {
      all.addAll(peer.cited());
    }
    return all;
  }

  /** One decision of the run's proxy. */
  record Decision(String decision, String host, int port, String reason) {
    /**
     * A decision as the run's view lists it, read by the vocabulary; one that does not read is a
     * decision about nothing, so every judgement on it fails closed.
     */
    static Decision of(JsonNode node) {
      try {
        EgressRecorded d = EgressRecorded.readListed(PlainJson.plain(node));
        return new Decision(d.decision(), d.host(), d.port(), d.reason().wireName());
      } catch (InvalidEventException e) {
        return new Decision("", "", 0, "");
      }
    }
  }

  /** An audit row the drill relies on: its id, type, hash, run and data, as the log holds them. */
  record AuditRef(long id, String type, String hash, String runId, JsonNode data) {
    /** A row as {@code GET /audit} answers it. */
    static AuditRef of(JsonNode row) {
      RecordedEvent recorded = RecordedEvent.fromJson(row);
      return new AuditRef(
          recorded.id(),
          recorded.type(),
          recorded.hash() == null ? "" : recorded.hash(),
          recorded.runId(),
          recorded.data());
    }

    /** The row as the event {@code kind}; empty when it is another kind or does not read. */
    <T extends RunEvent> Optional<T> as(Class<T> kind) {
      try {
        return RunEvent.read(type, PlainJson.plain(data)).filter(kind::isInstance).map(kind::cast);
      } catch (InvalidEventException e) {
        return Optional.empty();
      }
    }
  }

  /** The API's answer to a request that it was expected to refuse. */
  record Refusal(int httpStatus, String error) {}

  private static final String TRUNCATED = "\n[truncated by the drill]";

  /** At most {@link #MAX_OUTPUT} characters; idempotent, so a transcript read back is unchanged. */
  static String truncate(String output) {
    if (output.length() <= MAX_OUTPUT
        || (output.length() == MAX_OUTPUT + TRUNCATED.length() && output.endsWith(TRUNCATED))) {
      return output;
    }
    return output.substring(0, MAX_OUTPUT) + TRUNCATED;
  }

  /**
   * The {@code key=value} pairs of the output's {@code drill: } lines, in order; a key printed
   * twice keeps every value.
   */
  Map<String, List<String>> markers() {
    Map<String, List<String>> markers = new LinkedHashMap<>();
    for (String line : output.split("\n", -1)) {
      if (!line.startsWith("drill: ")) {
        continue;
      }
      Matcher pair = MARKER.matcher(line.substring("drill: ".length()));
      while (pair.find()) {
        markers.computeIfAbsent(pair.group(1), k -> new ArrayList<>()).add(pair.group(2));
      }
    }
    return markers;
  }

  /** The first value of a marker, if printed. */
  Optional<String> marker(String key) {
    List<String> values = markers().get(key);
    return values == null || values.isEmpty() ? Optional.empty() : Optional.of(values.get(0));
  }

  /** Whether the output has this exact line. */
  boolean printed(String line) {
    return output.lines().anyMatch(line::equals);
  }

  /** The audit rows that read as the event {@code kind}. */
  <T extends RunEvent> List<AuditRef> rows(Class<T> kind) {
    return audit.stream().filter(r -> r.as(kind).isPresent()).toList();
  }
}
