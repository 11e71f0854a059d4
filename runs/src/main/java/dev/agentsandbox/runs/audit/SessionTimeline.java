package dev.agentsandbox.runs.audit;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.policy.event.EgressRecorded;
import dev.agentsandbox.policy.event.FilesTransferred;
import dev.agentsandbox.policy.event.StepEnded;
import dev.agentsandbox.policy.event.StepKillRequested;
import dev.agentsandbox.policy.event.StepStarted;
import java.util.Map;
import java.util.TreeMap;

/**
 * A session's part of its timeline document, from its typed events alone: each step in order (who
 * asked, what, where, how it ended, who killed it) with the decisions its rows attribute to it, and
 * each file put and got (docs/runs.md, "The timeline").
 */
final class SessionTimeline {
  private SessionTimeline() {}

  /** Adds {@code steps} and {@code files} to {@code body}. */
  static void add(ObjectNode body, RunTimeline timeline, ObjectMapper json) {
    Map<Integer, ObjectNode> steps = new TreeMap<>();
    for (RunTimeline.Stamped<StepStarted> s : timeline.all(StepStarted.class)) {
      ObjectNode step = step(steps, s.event().step(), json);
      step.put("requested_by", s.row().actor());
      step.set("command", PlainJson.node(s.event().command()));
      step.put("cwd", s.event().cwd());
      step.set("env_keys", PlainJson.node(s.event().envKeys()));
      step.put("stdin_bytes", s.event().stdinBytes());
      step.put("background", s.event().background());
      step.put("timeout_seconds", s.event().timeoutSeconds());
      step.put("started_at", s.row().time().toString());
      step.put("start_audit_id", s.row().id());
    }
    for (RunTimeline.Stamped<StepEnded> s : timeline.all(StepEnded.class)) {
      StepEnded ended = s.event();
      ObjectNode step = step(steps, ended.step(), json);
      if (!step.has("command")) {
        step.set("command", PlainJson.node(ended.command()));
        step.put("cwd", ended.cwd());
      }
      step.put("end", ended.end());
      step.put("exit_status", ended.exitStatus().orElse(null));
      step.put("duration_ms", ended.durationMs());
      step.put("output_bytes", ended.outputBytes());
      step.put("egress_denied", ended.egressDenied());
      ended.detail().ifPresent(d -> step.put("detail", d));
      step.put("ended_at", s.row().time().toString());
      step.put("end_audit_id", s.row().id());
    }
    for (RunTimeline.Stamped<StepKillRequested> s : timeline.all(StepKillRequested.class)) {
      ObjectNode killed = json.createObjectNode();
      killed.put("token", s.row().actor());
      killed.put("at", s.row().time().toString());
      killed.put("audit_id", s.row().id());
      step(steps, s.event().step(), json).set("killed_by", killed);
    }
    for (RunTimeline.Stamped<EgressRecorded> s : timeline.all(EgressRecorded.class)) {
      for (int number : s.event().steps()) {
        ObjectNode decision = (ObjectNode) PlainJson.node(s.event().toTree());
        decision.remove("steps");
        decision.put("audit_id", s.row().id());
        ((ArrayNode)
                step(steps, number, json)
                    .get("egress")
                    .get(s.event().allowed() ? "allowed" : "denied"))
            .add(decision);
      }
    }
    ArrayNode list = body.putArray("steps");
    steps.values().forEach(list::add);
    ArrayNode files = body.putArray("files");
    for (RunTimeline.Stamped<FilesTransferred> s : timeline.all(FilesTransferred.class)) {
      ObjectNode file = (ObjectNode) PlainJson.node(s.event().toTree());
      file.put("by", s.row().actor());
      file.put("at", s.row().time().toString());
      file.put("audit_id", s.row().id());
      files.add(file);
    }
  }

  private static ObjectNode step(Map<Integer, ObjectNode> steps, int number, ObjectMapper json) {
    return steps.computeIfAbsent(
        number,
        n -> {
          ObjectNode step = json.createObjectNode();
          step.put("step", n);
          ObjectNode egress = step.putObject("egress");
          egress.putArray("allowed");
          egress.putArray("denied");
          return step;
        });
  }
}
