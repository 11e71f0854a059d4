package dev.agentsandbox.server.run;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.store.AuditRow;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A session's part of its timeline, from its audit rows alone: each step in order (who asked, what,
 * where, how it ended) with the decisions its proxy made while it ran, and each file put and got.
 */
final class SessionTimeline {
  private final ObjectMapper mapper;

  SessionTimeline(ObjectMapper mapper) {
    this.mapper = mapper;
  }

  /** Adds {@code steps} and {@code files} to {@code body}. */
  void add(ObjectNode body, List<AuditRow> rows) {
    Map<Integer, ObjectNode> steps = new TreeMap<>();
    ArrayNode files = mapper.createArrayNode();
    for (AuditRow row : rows) {
      JsonNode data = row.data();
      switch (row.type()) {
        case "agent_sandbox.exec.start" -> {
          ObjectNode step = step(steps, data.path("step").asInt());
          step.put("requested_by", row.actor());
          for (String field :
              List.of(
                  "command", "cwd", "env_keys", "stdin_bytes", "background", "timeout_seconds")) {
            if (data.has(field)) {
              step.set(field, data.get(field));
            }
          }
          step.put("started_at", row.time().toString());
          step.put("start_audit_id", row.id());
        }
        case "agent_sandbox.exec" -> {
          ObjectNode step = step(steps, data.path("step").asInt());
          if (!step.has("command")) {
            step.set("command", data.get("command"));
            step.set("cwd", data.get("cwd"));
          }
          for (String field :
              List.of(
                  "end", "exit_status", "duration_ms", "output_bytes", "egress_denied", "detail")) {
            if (data.has(field)) {
              step.set(field, data.get(field));
            }
          }
          step.put("ended_at", row.time().toString());
          step.put("end_audit_id", row.id());
        }
        case "agent_sandbox.step.kill" -> {
          ObjectNode kill = mapper.createObjectNode();
          kill.put("token", row.actor());
          kill.put("at", row.time().toString());
          kill.put("audit_id", row.id());
          step(steps, data.path("step").asInt()).set("killed_by", kill);
        }
        case "agent_sandbox.egress.allow", "agent_sandbox.egress.deny" -> {
          String list = row.type().endsWith(".deny") ? "denied" : "allowed";
          for (JsonNode number : data.path("steps")) {
            ObjectNode decision = data.deepCopy();
            decision.remove("labels");
            decision.remove("steps");
            decision.put("audit_id", row.id());
            decision.put(
                "time", data.has("time") ? data.get("time").asText() : row.time().toString());
            ((ArrayNode) step(steps, number.asInt()).get("egress").get(list)).add(decision);
          }
        }
        case "agent_sandbox.files" -> {
          ObjectNode file = data.deepCopy();
          file.remove("labels");
          file.put("by", row.actor());
          file.put("at", row.time().toString());
          file.put("audit_id", row.id());
          files.add(file);
        }
        default -> {}
      }
    }
    ArrayNode list = body.putArray("steps");
    steps.values().forEach(list::add);
    body.set("files", files);
  }

  private ObjectNode step(Map<Integer, ObjectNode> steps, int number) {
    return steps.computeIfAbsent(
        number,
        n -> {
          ObjectNode step = mapper.createObjectNode();
          step.put("step", n);
          ObjectNode egress = step.putObject("egress");
          egress.putArray("allowed");
          egress.putArray("denied");
          return step;
        });
  }
}
