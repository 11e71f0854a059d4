package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.policy.event.ArtifactsCollected;
import dev.agentsandbox.policy.event.CredentialsRevoked;
import dev.agentsandbox.policy.event.EventType;
import dev.agentsandbox.policy.event.Failed;
import dev.agentsandbox.policy.event.KillRequested;
import dev.agentsandbox.policy.event.Launched;
import dev.agentsandbox.policy.event.Reaped;
import dev.agentsandbox.policy.event.Started;
import dev.agentsandbox.policy.event.TimedOut;
import dev.agentsandbox.policy.event.TornDown;
import dev.agentsandbox.policy.text.Bounded;
import dev.agentsandbox.runs.audit.RecordedEvent;
import dev.agentsandbox.runs.audit.RunTimeline;
import java.io.IOException;
import java.io.PrintWriter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A run's timeline ({@code GET .../runs/{id}/timeline}) as {@code runs timeline} and {@code audit
 * run} print it: the four answers (who launched it, what ran, what was allowed and denied, how it
 * ended), every audit row of the run as a table line, and whether the audit chain verifies up to
 * the newest of them. The document is read back as the runs module's {@code RunTimeline}, its rows
 * as the vocabulary's events, so the answers come from the same types the server built them from.
 */
final class TimelineView {
  static final List<String> HEADERS = List.of("TIME", "AUDIT ID", "KIND", "SUMMARY");

  /** Longest summary cell; the whole row is in {@code -o json}. */
  static final int SUMMARY_WIDTH = 100;

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
  static List<String> answers(JsonNode document) {
    RunTimeline timeline = RunTimeline.read(document);
    RunTimeline.Run run = timeline.run();
    List<String> labels = new ArrayList<>();
    run.labels().forEach((key, value) -> labels.add(key + "=" + value));
    List<String> lines = new ArrayList<>();
    lines.add("Run        " + run.runId() + " (agent " + run.agent() + ")");
    Optional<RunTimeline.Stamped<Launched>> launch = timeline.launch();
    lines.add(
        "Launched   "
            + launch
                .map(l -> "by " + l.row().actor() + " at " + l.row().time())
                .orElse("- (no launch row: the run was refused before it launched)")
            + (labels.isEmpty() ? "" : ", labels " + String.join(",", labels)));
    if (launch.isPresent()) {
      Launched l = launch.get().event();
      Optional<Started> started = timeline.started().map(RunTimeline.Stamped::event);
      lines.add(
          "Ran        "
              + l.image()
              + " on "
              + l.backend()
              + " ("
              + started.map(Started::runtime).orElse(l.runtime())
              + ", "
              + l.isolation()
              + "): "
              + String.join(" ", l.command()));
      started.flatMap(Started::imageId).ifPresent(id -> lines.add("Image id   " + id));
      lines.add(
          "Allowed    "
              + (l.effectiveAllow().isEmpty()
                  ? "nothing (every connection refused)"
                  : String.join(", ", l.effectiveAllow())));
    }
    List<String> credentials = EventSummary.credentials(timeline.credentials());
    lines.add("Credentials " + (credentials.isEmpty() ? "none" : String.join(", ", credentials)));
    long inFull = timeline.denied().size();
    lines.add(
        "Egress     "
            + timeline.deniedTotal()
            + " denied"
            + (timeline.counted().isEmpty() ? "" : " (" + inFull + " in full, the rest counted)")
            + ", "
            + timeline.allowed().size()
            + " allowed (first connection per host)");
    lines.add("Ended      " + ending(timeline));
    return lines.stream().map(TimelineView::clean).toList();
  }

  /** One table row per audit row of the run, oldest first. */
  static List<List<String>> rows(JsonNode document) {
    List<List<String>> rows = new ArrayList<>();
    for (RecordedEvent event : RunTimeline.read(document).events()) {
      String type = event.type();
      rows.add(
          List.of(
              event.time().truncatedTo(ChronoUnit.MILLIS).toString(),
              Long.toString(event.id()),
              type.startsWith(EventType.NAMESPACE)
                  ? type.substring(EventType.NAMESPACE.length())
                  : type,
              bounded(EventSummary.of(event))));
    }
    return rows;
  }

  /** The chain statement: verified up to which row, or what is wrong. */
  static String chain(JsonNode document) {
    RunTimeline.Chain chain = RunTimeline.read(document).chain();
    String upTo = chain.upToId().isPresent() ? Long.toString(chain.upToId().getAsLong()) : "-";
    if (chain.verified()) {
      return "Audit chain verified up to row "
          + upTo
          + " (hash "
          + chain.upToHash().orElse("-")
          + ", "
          + chain.rowsChecked()
          + " rows checked"
          + (chain.walkedFromId() > 0
              ? " after row " + chain.walkedFromId() + ", verified earlier, and this run's rows"
              : "")
          + ")";
    }
    List<String> problems = new ArrayList<>(chain.problems());
    chain.note().ifPresent(problems::add);
    return "Audit chain NOT verified up to row "
        + upTo
        + ": "
        + (problems.isEmpty() ? "no detail given" : String.join("; ", problems))
        + " (agent-sandbox audit verify --db ... shows every problem)";
  }

  private static String ending(RunTimeline timeline) {
    RunTimeline.Run run = timeline.run();
    StringBuilder text = new StringBuilder(run.status());
    if (run.exitStatus() != null) {
      text.append(", exit ").append(run.exitStatus());
    }
    timeline
        .last(KillRequested.class)
        .ifPresent(k -> text.append(", killed by ").append(k.row().actor()));
    if (timeline.last(TimedOut.class).isPresent()) {
      text.append(", at its deadline");
    }
    timeline
        .last(Failed.class)
        .ifPresent(f -> text.append(", failed: ").append(f.event().message()));
    if (run.endedAt() != null) {
      text.append(" at ").append(run.endedAt());
    }
    timeline
        .last(EventType.TEARDOWN)
        .ifPresent(
            t -> {
              boolean removed = t.event() instanceof Reaped || ((TornDown) t.event()).removed();
              text.append(
                  removed
                      ? "; teardown removed everything"
                      : "; teardown left something"
                          + ((TornDown) t.event()).problem().map(p -> " (" + p + ")").orElse(""));
            });
    timeline
        .last(EventType.ARTIFACTS)
        .ifPresent(
            a ->
                text.append(
                    a.event() instanceof ArtifactsCollected kept
                        ? "; artifacts: " + kept.files().size() + " kept"
                        : "; artifacts: not collected"));
    timeline
        .last(CredentialsRevoked.class)
        .filter(r -> !r.event().live().isEmpty())
        .ifPresent(
            r ->
                text.append("; ")
                    .append(r.event().live().size())
                    .append(" credential(s) not revoked, working until their expiry"));
    return text.toString();
  }

  /**
   * One cell: at most {@link #SUMMARY_WIDTH} characters of the text, never empty, control,
   * bidirectional and invisible characters shown as {@code <U+XXXX>} (a command or a host name must
   * not move a terminal's cursor, change its colours or reorder the line); the escapes do not count
   * against the width, so a cut never splits one.
   */
  static String bounded(String text) {
    if (text == null || text.isBlank()) {
      return "-";
    }
    return text.length() <= SUMMARY_WIDTH
        ? clean(text)
        : Bounded.text(text, SUMMARY_WIDTH - 1, Bounded.Escape.TEXT, "…");
  }

  static String clean(String text) {
    return TerminalText.line(text);
  }
}
