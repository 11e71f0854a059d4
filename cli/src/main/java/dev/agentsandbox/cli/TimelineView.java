package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.PrintWriter;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;

/**
 * A run's timeline ({@code GET .../runs/{id}/timeline}) as {@code runs timeline} and {@code audit
 * run} print it: the four answers (who launched it, what ran, what was allowed and denied, how it
 * ended), every audit row of the run as a table line, and whether the audit chain verifies up to
 * the newest of them.
 */
final class TimelineView {
  static final List<String> HEADERS = List.of("TIME", "AUDIT ID", "KIND", "SUMMARY");

  /** Longest summary cell; the whole row is in {@code -o json}. */
  static final int SUMMARY_WIDTH = 100;

  private static final String PREFIX = "agent_sandbox.";

  private TimelineView() {}

  /**
   * Fetches and prints the timeline of {@code runId}; returns 0 when the chain verifies up to the
   * run's newest row, 1 when it does not (the document is printed either way).
   */
  static int print(
      AdminApi client, String runId, Printer printer, PrintWriter out, Terminal terminal)
      throws IOException, InterruptedException {
    JsonNode timeline =
        client.get("read the timeline of run " + runId, AdminApi.RUNS + "/" + runId + "/timeline");
    boolean verified = timeline.path("chain").path("verified").asBoolean(false);
    if (printer.document(out, timeline)) {
      return verified ? 0 : Main.FAILED;
    }
    if (!printer.noHeaders) {
      for (String line : answers(timeline)) {
        out.println(line);
      }
      out.println();
    }
    printer.table(out, HEADERS, rows(timeline));
    if (!printer.noHeaders) {
      out.println();
      String chain = chain(timeline);
      out.println(verified ? terminal.green(chain) : terminal.red(chain));
    }
    out.flush();
    return verified ? 0 : Main.FAILED;
  }

  /** The four answers, one line each, for a person. */
  static List<String> answers(JsonNode timeline) {
    JsonNode who = timeline.path("launched_by");
    JsonNode what = timeline.path("what_ran");
    JsonNode end = timeline.path("end");
    List<String> labels = new ArrayList<>();
    timeline
        .path("labels")
        .properties()
        .forEach(l -> labels.add(l.getKey() + "=" + l.getValue().asText()));
    List<String> lines = new ArrayList<>();
    lines.add(
        "Run        "
            + timeline.path("run_id").asText()
            + " (agent "
            + timeline.path("agent").asText()
            + ")");
    lines.add(
        "Launched   "
            + (who.has("token")
                ? "by " + who.path("token").asText() + " at " + who.path("at").asText()
                : "- (no launch row: the run was refused before it launched)")
            + (labels.isEmpty() ? "" : ", labels " + String.join(",", labels)));
    if (what.has("image")) {
      lines.add(
          "Ran        "
              + what.path("image").asText()
              + " on "
              + what.path("backend").asText()
              + " ("
              + what.path("runtime").asText()
              + ", "
              + what.path("isolation").asText()
              + "): "
              + joined(what.path("command"), " "));
      if (what.path("image_id").isTextual()) {
        lines.add("Image id   " + what.path("image_id").asText());
      }
      lines.add(
          "Allowed    "
              + (what.path("effective_allow").isEmpty()
                  ? "nothing (every connection refused)"
                  : joined(what.path("effective_allow"), ", ")));
    }
    List<String> credentials = credentials(what.path("credentials"));
    lines.add("Credentials " + (credentials.isEmpty() ? "none" : String.join(", ", credentials)));
    JsonNode egress = timeline.path("egress");
    lines.add(
        "Egress     "
            + egress.path("denied").size()
            + " denied, "
            + egress.path("allowed").size()
            + " allowed (first connection per host)");
    lines.add("Ended      " + ending(end));
    return lines.stream().map(TimelineView::clean).toList();
  }

  /** Each credential as {@code name (source, expires T)}: names and expiries, never values. */
  private static List<String> credentials(JsonNode list) {
    List<String> out = new ArrayList<>();
    list.forEach(
        c ->
            out.add(
                c.path("name").asText()
                    + " ("
                    + c.path("source").asText()
                    + ", expires "
                    + c.path("expires_at").asText()
                    + ")"));
    return out;
  }

  /** One table row per audit row of the run, oldest first. */
  static List<List<String>> rows(JsonNode timeline) {
    List<List<String>> rows = new ArrayList<>();
    for (JsonNode event : timeline.path("events")) {
      String type = event.path("type").asText();
      rows.add(
          List.of(
              time(event.path("time")),
              event.path("id").asText(),
              type.startsWith(PREFIX) ? type.substring(PREFIX.length()) : type,
              bounded(summary(type, event.path("actor").asText(), event.path("data")))));
    }
    return rows;
  }

  /** The chain statement: verified up to which row, or what is wrong. */
  static String chain(JsonNode timeline) {
    JsonNode chain = timeline.path("chain");
    if (chain.path("verified").asBoolean(false)) {
      return "Audit chain verified up to row "
          + chain.path("up_to_id").asText()
          + " (hash "
          + chain.path("up_to_hash").asText()
          + ", "
          + chain.path("rows_checked").asText()
          + " rows checked)";
    }
    List<String> problems = new ArrayList<>();
    chain.path("problems").forEach(p -> problems.add(p.asText()));
    if (chain.has("note")) {
      problems.add(chain.path("note").asText());
    }
    return "Audit chain NOT verified up to row "
        + chain.path("up_to_id").asText("-")
        + ": "
        + (problems.isEmpty() ? "no detail given" : String.join("; ", problems))
        + " (agent-sandbox audit verify --db ... shows every problem)";
  }

  static String summary(String type, String actor, JsonNode data) {
    return switch (type) {
      case "agent_sandbox.launch" ->
          "by "
              + actor
              + ": "
              + data.path("image").asText()
              + " on "
              + data.path("backend").asText()
              + " ("
              + data.path("runtime").asText()
              + "): "
              + joined(data.path("command"), " ");
      case "agent_sandbox.started" ->
          "running under "
              + data.path("runtime").asText("?")
              + (data.path("image_id").isTextual()
                  ? ", image " + data.path("image_id").asText()
                  : ", image " + data.path("image").asText("?"));
      case "agent_sandbox.refused" ->
          "refused (" + data.path("reason").asText() + "): " + data.path("message").asText();
      case "agent_sandbox.credentials.issue" ->
          "issued " + String.join(", ", credentials(data.path("credentials")));
      case "agent_sandbox.egress.allow", "agent_sandbox.egress.deny" ->
          data.path("decision").asText(type.endsWith("deny") ? "deny" : "allow")
              + " "
              + data.path("host").asText("?")
              + ":"
              + data.path("port").asText("?")
              + " "
              + data.path("reason").asText("")
              + (data.path("detail").isTextual() ? " (" + data.path("detail").asText() + ")" : "");
      case "agent_sandbox.kill" -> "kill asked by " + actor;
      case "agent_sandbox.timeout" ->
          "deadline reached after " + data.path("ttl_seconds").asText() + " s";
      case "agent_sandbox.failure", "agent_sandbox.runtime_mismatch", "agent_sandbox.proxy_died" ->
          data.path("stage").isTextual()
              ? data.path("stage").asText() + ": " + data.path("message").asText()
              : data.path("message").asText();
      case "agent_sandbox.artifacts" -> artifacts(data);
      case "agent_sandbox.teardown" ->
          (data.path("end").asText().equals("exit") && data.path("exit_status").isInt()
                  ? "exited with status " + data.path("exit_status").asInt()
                  : "ended: "
                      + data.path("end").asText("-")
                      + (data.path("exit_status").isInt()
                          ? " (exit status " + data.path("exit_status").asInt() + ")"
                          : ""))
              + (data.path("removed").asBoolean(false)
                  ? ", everything removed"
                  : ", not all removed" + problem(data))
              + (data.path("by").isTextual() ? " (by " + data.path("by").asText() + ")" : "");
      default -> data.isObject() ? compact(data) : "";
    };
  }

  private static String artifacts(JsonNode data) {
    if (!data.path("collected").asBoolean(false)) {
      return "outputs not collected: " + data.path("reason").asText();
    }
    List<String> files = new ArrayList<>();
    data.path("files").forEach(f -> files.add(f.path("path").asText()));
    return data.path("files").size()
        + " kept ("
        + data.path("bytes").asText()
        + " bytes"
        + (data.path("dropped_count").asInt(0) > 0
            ? ", " + data.path("dropped_count").asInt() + " dropped"
            : "")
        + ")"
        + (files.isEmpty() ? "" : ": " + String.join(", ", files));
  }

  private static String ending(JsonNode end) {
    StringBuilder text = new StringBuilder(end.path("status").asText());
    if (end.path("exit_status").isInt()) {
      text.append(", exit ").append(end.path("exit_status").asInt());
    }
    if (end.has("killed_by")) {
      text.append(", killed by ").append(end.path("killed_by").path("token").asText());
    }
    if (end.has("timeout")) {
      text.append(", at its deadline");
    }
    if (end.has("failure")) {
      text.append(", failed: ").append(end.path("failure").path("detail").path("message").asText());
    }
    if (end.path("ended_at").isTextual()) {
      text.append(" at ").append(end.path("ended_at").asText());
    }
    JsonNode teardown = end.path("teardown").path("detail");
    if (!teardown.isMissingNode()) {
      text.append(
          teardown.path("removed").asBoolean(false)
              ? "; teardown removed everything"
              : "; teardown left something" + problem(teardown));
    }
    JsonNode artifacts = end.path("artifacts").path("detail");
    if (!artifacts.isMissingNode()) {
      text.append(
          artifacts.path("collected").asBoolean(false)
              ? "; artifacts: " + artifacts.path("files").size() + " kept"
              : "; artifacts: not collected");
    }
    return text.toString();
  }

  private static String problem(JsonNode data) {
    return data.path("problem").isTextual() ? " (" + data.path("problem").asText() + ")" : "";
  }

  private static String time(JsonNode node) {
    Instant at = Printer.instant(node);
    return at == null ? "-" : at.truncatedTo(ChronoUnit.MILLIS).toString();
  }

  private static String joined(JsonNode array, String separator) {
    List<String> parts = new ArrayList<>();
    array.forEach(v -> parts.add(v.asText()));
    return String.join(separator, parts);
  }

  private static String compact(JsonNode data) {
    com.fasterxml.jackson.databind.node.ObjectNode copy = data.deepCopy();
    copy.remove("labels");
    return copy.toString();
  }

  /**
   * One cell: at most {@link #SUMMARY_WIDTH} characters, never empty, control, bidirectional and
   * invisible characters shown as {@code <U+XXXX>} (a command or a host name must not move a
   * terminal's cursor, change its colours or reorder the line).
   */
  static String bounded(String text) {
    String clean = clean(text);
    if (clean.isBlank()) {
      return "-";
    }
    return clean.length() <= SUMMARY_WIDTH ? clean : clean.substring(0, SUMMARY_WIDTH - 1) + "…";
  }

  static String clean(String text) {
    return TerminalText.line(text);
  }
}
