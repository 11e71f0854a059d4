package dev.agentsandbox.server.run;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.backend.session.PathInfo;
import dev.agentsandbox.runs.session.FileRead;
import dev.agentsandbox.runs.session.FileWritten;
import dev.agentsandbox.runs.session.StepView;
import java.time.Instant;
import java.util.List;

/**
 * The JSON of sessions' steps and files: field names, order and nulls are the API's contract
 * (docs/api.md, "Sessions"), written here and nowhere else.
 */
final class SessionJson {
  private final ObjectMapper mapper;

  SessionJson(ObjectMapper mapper) {
    this.mapper = mapper;
  }

  /** A step: its whole result, or (a listing's item) its summary without output. */
  ObjectNode step(StepView step) {
    ObjectNode view = mapper.createObjectNode();
    view.put("run_id", step.runId());
    view.put("step", step.step());
    view.put("status", step.running() ? "running" : "ended");
    ArrayNode command = view.putArray("command");
    step.command().forEach(command::add);
    view.put("cwd", step.cwd());
    view.put("background", step.background());
    view.put("timeout_seconds", step.timeoutSeconds());
    view.put("stdin_bytes", step.stdinBytes());
    view.put("started_at", time(step.startedAt()));
    view.put("ended_at", time(step.endedAt()));
    view.put("duration_ms", step.durationMs());
    view.put("end", step.end().map(e -> e.wireName()).orElse(null));
    view.put("exit_status", step.exitStatus());
    step.output()
        .ifPresent(
            output -> {
              view.put("stdout", output.stdout());
              view.put("stderr", output.stderr());
            });
    view.put("output_bytes", step.outputBytes());
    step.output()
        .ifPresent(
            output -> {
              view.put("output_truncated", output.truncated());
              ArrayNode egress = view.putArray("egress");
              output.egress().forEach(d -> egress.add(mapper.valueToTree(d)));
            });
    view.put("egress_denied", step.egressDenied());
    if (!step.detail().isEmpty()) {
      view.put("detail", step.detail());
    }
    return view;
  }

  ObjectNode steps(String runId, List<StepView> steps) {
    ObjectNode body = mapper.createObjectNode();
    body.put("run_id", runId);
    ArrayNode list = body.putArray("steps");
    steps.forEach(step -> list.add(step(step)));
    return body;
  }

  ObjectNode written(FileWritten written) {
    ObjectNode body = mapper.createObjectNode();
    body.put("path", written.path());
    if (written.folder()) {
      body.put("kind", "folder");
      body.put("files", written.files());
      body.put("folders", written.folders());
      body.put("bytes", written.bytes());
    } else {
      body.put("kind", "file");
      body.put("size", written.size());
    }
    body.put("sha256", written.sha256());
    return body;
  }

  ObjectNode listing(FileRead.Listing listing) {
    ObjectNode body = mapper.createObjectNode();
    body.put("path", listing.path());
    ArrayNode entries = body.putArray("entries");
    for (PathInfo entry : listing.entries()) {
      ObjectNode e = entries.addObject();
      e.put("name", entry.path().name());
      e.put("kind", entry.kind().wireName());
      e.put("size", entry.size());
      e.put("mode", String.format("%04o", entry.mode()));
      e.put("modified", entry.modified().toString());
    }
    body.put("truncated", listing.truncated());
    return body;
  }

  private static String time(Instant instant) {
    return instant == null ? null : instant.toString();
  }
}
