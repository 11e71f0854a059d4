package dev.agentsandbox.mcp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;

/**
 * What each tool answers a model: a short text (the exit status, the output's tail, each egress
 * refusal with its reason and what it means) and the same facts as structured content. Output tails
 * are cut to {@link #TAIL_CHARS} so one chatty step does not fill a context window; the whole tail
 * stays readable through the API.
 */
final class Reports {
  /** The most of each output stream a result carries. */
  static final int TAIL_CHARS = 16 * 1024;

  private final ObjectMapper json;

  Reports(ObjectMapper json) {
    this.json = json;
  }

  /** A tool's answer: the text a model reads and the structured content beside it. */
  record Answer(String text, ObjectNode structured) {}

  /** A one-shot run's or a closed session's result. */
  Answer run(JsonNode run) {
    ObjectNode out = json.createObjectNode();
    copy(run, out, "run_id", "kind", "agent", "status", "end", "exit_status", "backend");
    copy(run, out, "isolation", "started_at", "ended_at", "detail");
    String tail = Texts.tail(run.path("output_tail").asText(""), TAIL_CHARS);
    out.put("output_tail", tail);
    List<EgressRefusals.Refusal> refusals = refusals(run.path("egress"), out);
    StringBuilder text = new StringBuilder();
    text.append(run.path("kind").asText("run").equals("session") ? "session " : "run ")
        .append(run.path("run_id").asText())
        .append(" of agent ")
        .append(run.path("agent").asText("?"))
        .append(" ended: ")
        .append(run.path("end").asText(run.path("status").asText()));
    if (run.hasNonNull("exit_status")) {
      text.append(", exit status ").append(run.get("exit_status").asInt());
    }
    if (run.hasNonNull("detail")) {
      text.append(" (").append(run.get("detail").asText()).append(')');
    }
    text.append('\n');
    section(text, "output (its tail)", tail);
    egress(text, refusals);
    return new Answer(text.toString(), out);
  }

  /** A step's result ({@code exec}). */
  Answer step(JsonNode step) {
    ObjectNode out = json.createObjectNode();
    copy(step, out, "run_id", "step", "status", "end", "exit_status", "duration_ms", "cwd");
    copy(step, out, "output_bytes", "output_truncated", "detail");
    String stdout = Texts.tail(step.path("stdout").asText(""), TAIL_CHARS);
    String stderr = Texts.tail(step.path("stderr").asText(""), TAIL_CHARS);
    out.put("stdout", stdout);
    out.put("stderr", stderr);
    List<EgressRefusals.Refusal> refusals = refusals(step.path("egress"), out);
    StringBuilder text = new StringBuilder();
    text.append("step ").append(step.path("step").asInt()).append(' ');
    if (step.path("status").asText().equals("running")) {
      text.append("is running");
    } else {
      text.append("ended: ").append(step.path("end").asText());
      if (step.hasNonNull("exit_status")) {
        text.append(", exit status ").append(step.get("exit_status").asInt());
      }
      if (step.hasNonNull("duration_ms")) {
        text.append(", ").append(step.get("duration_ms").asLong()).append(" ms");
      }
    }
    if (step.hasNonNull("detail")) {
      text.append(" (").append(step.get("detail").asText()).append(')');
    }
    text.append('\n');
    section(text, "stdout", stdout);
    section(text, "stderr", stderr);
    egress(text, refusals);
    return new Answer(text.toString(), out);
  }

  /** An opened session. */
  Answer opened(JsonNode session) {
    ObjectNode out = json.createObjectNode();
    copy(session, out, "run_id", "agent", "status", "backend", "runtime", "isolation");
    copy(session, out, "expires_at", "idle_seconds", "idle_expires_at");
    String text =
        "session "
            + session.path("run_id").asText()
            + " is open for agent "
            + session.path("agent").asText()
            + " ("
            + session.path("backend").asText()
            + ", "
            + session.path("isolation").asText()
            + "): pass its run_id to exec, write_file, read_file and list_files; it ends at "
            + session.path("expires_at").asText()
            + " at the latest, after "
            + session.path("idle_seconds").asText()
            + " s without a step or a file operation, or when close_session closes it (files"
            + " under /workspace/out are kept as the run's artifacts).";
    return new Answer(text, out);
  }

  /** The result of writing one file. */
  Answer written(JsonNode written) {
    ObjectNode out = json.createObjectNode();
    copy(written, out, "path", "kind", "size", "sha256");
    return new Answer(
        "wrote "
            + written.path("path").asText()
            + " ("
            + written.path("size").asLong()
            + " bytes, sha256 "
            + written.path("sha256").asText()
            + ")",
        out);
  }

  /** A folder's listing. */
  Answer listing(JsonNode listing) {
    ObjectNode out = json.createObjectNode();
    copy(listing, out, "path", "truncated");
    ArrayNode entries = out.putArray("entries");
    StringBuilder text = new StringBuilder(listing.path("path").asText()).append(":\n");
    for (JsonNode entry : listing.path("entries")) {
      entries.add(entry);
      text.append(entry.path("kind").asText())
          .append('\t')
          .append(entry.path("size").asLong())
          .append('\t')
          .append(entry.path("name").asText())
          .append('\n');
    }
    if (listing.path("entries").isEmpty()) {
      text.append("(empty)\n");
    }
    if (listing.path("truncated").asBoolean()) {
      text.append("(more entries than a listing holds)\n");
    }
    return new Answer(text.toString(), out);
  }

  /** A refusal or failure, as the API said it. */
  Answer error(SandboxApiException e) {
    ObjectNode out = json.createObjectNode();
    out.put("error", e.code());
    out.put("message", e.getMessage());
    if (e.status() > 0) {
      out.put("status", e.status());
    }
    if (e.body() != null) {
      e.body()
          .fields()
          .forEachRemaining(
              field -> {
                if (!out.has(field.getKey())) {
                  out.set(field.getKey(), field.getValue());
                }
              });
    }
    return new Answer(e.code() + ": " + e.getMessage(), out);
  }

  private List<EgressRefusals.Refusal> refusals(JsonNode decisions, ObjectNode out) {
    List<EgressRefusals.Refusal> refusals = EgressRefusals.of(decisions);
    ArrayNode list = out.putArray("egress_refused");
    for (EgressRefusals.Refusal refusal : refusals) {
      ObjectNode row = list.addObject();
      row.put("host", refusal.host());
      row.put("port", refusal.port());
      row.put("reason", refusal.reason());
      row.put("explanation", refusal.explanation());
      row.put("retry_may_help", refusal.retryMayHelp());
    }
    return refusals;
  }

  private static void egress(StringBuilder text, List<EgressRefusals.Refusal> refusals) {
    if (refusals.isEmpty()) {
      return;
    }
    text.append("egress refused (")
        .append(refusals.size())
        .append(refusals.size() == 1 ? " connection" : " connections")
        .append("):\n");
    refusals.forEach(refusal -> text.append("- ").append(refusal.line()).append('\n'));
  }

  private static void section(StringBuilder text, String name, String content) {
    if (content.isEmpty()) {
      return;
    }
    text.append(name).append(":\n").append(content);
    if (!content.endsWith("\n")) {
      text.append('\n');
    }
  }

  private static void copy(JsonNode from, ObjectNode to, String... fields) {
    for (String field : fields) {
      if (from.has(field)) {
        to.set(field, from.get(field));
      }
    }
  }
}
