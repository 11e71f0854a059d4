package dev.agentsandbox.server.run;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.runs.RunIds;
import dev.agentsandbox.server.http.ApiException;
import dev.agentsandbox.server.http.Json;
import dev.agentsandbox.server.http.Request;
import dev.agentsandbox.server.http.Response;
import dev.agentsandbox.store.AuditHead;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.AuditRow;
import dev.agentsandbox.store.RunRecord;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.store.VerifyResult;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * {@code GET .../runs/{id}/timeline}: one run's audit trail answering the playbook's four questions
 * in one view — who launched it, what ran, what was allowed and denied, and when and how it died —
 * with every row of the run in order, each with its audit id, and the chain verified up to the
 * newest of them. A session's timeline has its steps in order, each with the decisions made while
 * it ran, and its file operations ({@link SessionTimeline}).
 */
public final class TimelineEndpoints {
  /** Most audit rows of one run the timeline reads. */
  static final int MAX_ROWS = 10_000;

  private final Store store;
  private final ObjectMapper mapper;

  public TimelineEndpoints(Store store, ObjectMapper mapper) {
    this.store = store;
    this.mapper = mapper;
  }

  /** {@code GET .../runs/{id}/timeline}. */
  public Response timeline(Request request) {
    request.onlyQueryParams(Set.of());
    String id = request.pathParam("id");
    RunRecord run =
        (RunIds.valid(id) ? store.runs().find(id) : java.util.Optional.<RunRecord>empty())
            .orElseThrow(
                () ->
                    new ApiException(
                        404,
                        "run_not_found",
                        "read the timeline of a run: no run has this id (list runs with GET"
                            + " .../runs)"));
    return Response.json(200, Json.bytes(mapper, build(run)));
  }

  /** The timeline of {@code run}, from the store alone. */
  ObjectNode build(RunRecord run) {
    List<AuditRow> rows = rows(run.runId());
    ObjectNode body = mapper.createObjectNode();
    body.put("run_id", run.runId());
    body.put("kind", run.kind().wireName());
    body.put("agent", run.agent());
    body.put("status", run.status().wireName());
    ObjectNode labels = body.putObject("labels");
    store.runs().labels(run.runId()).forEach(labels::put);

    ObjectNode who = body.putObject("launched_by");
    ObjectNode what = body.putObject("what_ran");
    ArrayNode allowed = mapper.createArrayNode();
    ArrayNode denied = mapper.createArrayNode();
    ObjectNode end = mapper.createObjectNode();
    end.put("status", run.status().wireName());
    end.put("end_reason", run.endReason());
    if (run.exitStatus() != null) {
      end.put("exit_status", run.exitStatus());
    }
    end.put("ended_at", run.endedAt() == null ? null : run.endedAt().toString());
    ArrayNode events = body.putArray("events");
    for (AuditRow row : rows) {
      JsonNode data = row.data();
      switch (row.type()) {
        case "agent_sandbox.launch" -> {
          who.put("token", row.actor());
          who.put("at", row.time().toString());
          who.put("audit_id", row.id());
          for (String field :
              List.of(
                  "image",
                  "command",
                  "backend",
                  "runtime",
                  "isolation",
                  "effective_allow",
                  "ttl_seconds",
                  "resources",
                  "env_keys")) {
            if (data.has(field)) {
              what.set(field, data.get(field));
            }
          }
        }
        case "agent_sandbox.started" -> {
          what.set("runtime", data.get("runtime"));
          if (data.has("image_id")) {
            what.set("image_id", data.get("image_id"));
          }
          if (data.has("proxy_pool")) {
            what.set("proxy_pool", data.get("proxy_pool"));
          }
          what.put("started_at", row.time().toString());
        }
        case "agent_sandbox.credentials.issue" -> what.set("credentials", data.get("credentials"));
        case "agent_sandbox.egress.allow" -> allowed.add(decision(row));
        case "agent_sandbox.egress.deny" -> denied.add(decision(row));
        case "agent_sandbox.kill" -> end.set("killed_by", stamp(row, "token", row.actor()));
        case "agent_sandbox.close" -> end.set("closed_by", stamp(row, "token", row.actor()));
        case "agent_sandbox.idle" -> end.set("idle", stamp(row, "detail", data));
        case "agent_sandbox.timeout" -> end.set("timeout", stamp(row, "detail", data));
        case "agent_sandbox.failure" -> end.set("failure", stamp(row, "detail", data));
        case "agent_sandbox.artifacts" -> end.set("artifacts", stamp(row, "detail", data));
        case "agent_sandbox.teardown" -> end.set("teardown", stamp(row, "detail", data));
        default -> {}
      }
      ObjectNode event = events.addObject();
      event.put("id", row.id());
      event.put("time", row.time().toString());
      event.put("type", row.type());
      event.put("actor", row.actor());
      event.set("data", data);
    }
    if (run.isSession()) {
      new SessionTimeline(mapper).add(body, rows);
    }
    if (!what.has("credentials")) {
      what.putArray("credentials");
    }
    ObjectNode egress = body.putObject("egress");
    egress.set("allowed", allowed);
    egress.set("denied", denied);
    body.set("end", end);
    ObjectNode chain = body.putObject("chain");
    if (rows.isEmpty()) {
      chain.put("verified", false);
      chain.put("note", "the run has no audit rows");
    } else {
      AuditRow last = rows.get(rows.size() - 1);
      VerifyResult result = store.audit().verify(new AuditHead(last.id(), last.hash()));
      chain.put("verified", result.ok());
      chain.put("up_to_id", last.id());
      chain.put("up_to_hash", last.hash());
      chain.put("rows_checked", result.rowsChecked());
      ArrayNode problems = chain.putArray("problems");
      result.problems().forEach(problems::add);
    }
    return body;
  }

  private List<AuditRow> rows(String runId) {
    List<AuditRow> rows = new ArrayList<>();
    Long after = 0L;
    while (rows.size() < MAX_ROWS) {
      List<AuditRow> page =
          store.audit().query(new AuditQuery(null, null, runId, null, after, AuditQuery.MAX_LIMIT));
      rows.addAll(page);
      if (page.size() < AuditQuery.MAX_LIMIT) {
        break;
      }
      after = page.get(page.size() - 1).id();
    }
    return rows;
  }

  private ObjectNode decision(AuditRow row) {
    ObjectNode d = row.data().deepCopy();
    d.remove("labels");
    d.put("audit_id", row.id());
    d.put("time", row.time().toString());
    return d;
  }

  private ObjectNode stamp(AuditRow row, String field, Object value) {
    ObjectNode node = mapper.createObjectNode();
    node.put("audit_id", row.id());
    node.put("time", row.time().toString());
    if (value instanceof JsonNode json) {
      ObjectNode copy = json.deepCopy();
      copy.remove("labels");
      node.set(field, copy);
    } else {
      node.put(field, String.valueOf(value));
    }
    return node;
  }
}
