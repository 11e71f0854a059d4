package dev.agentsandbox.server.run;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.Manifest;
import dev.agentsandbox.runs.PlanView;
import dev.agentsandbox.runs.RunView;
import dev.agentsandbox.runs.audit.PlainJson;
import dev.agentsandbox.store.RunRecord;
import java.time.Instant;
import java.util.List;
import java.util.Locale;

/**
 * The JSON the run endpoints answer with: field names, their order and their nulls are the API's
 * contract (docs/api.md), so they are written here and nowhere else.
 */
final class RunJson {
  private final ObjectMapper mapper;

  RunJson(ObjectMapper mapper) {
    this.mapper = mapper;
  }

  ObjectNode plan(PlanView plan) {
    ObjectNode view = mapper.createObjectNode();
    view.put("agent", plan.agent());
    view.put("enabled", plan.enabled());
    view.put("agent_configured", plan.agentConfigured());
    view.put("backend", plan.backend());
    view.put("runtime", plan.runtime());
    view.put("isolation", isolation(plan.isolation()));
    view.put("available", plan.available());
    view.put("probe", plan.probeDetail());
    strings(view.putArray("probes_running"), plan.stillProbing());
    view.put("image", plan.image());
    strings(view.putArray("command"), plan.command());
    strings(view.putArray("allow"), plan.egress().allow().asStrings());
    if (plan.egress().instanceAllow().isPresent()) {
      strings(view.putArray("instance_allow"), plan.egress().instanceAllow().get().asStrings());
    } else {
      view.put("instance_allow", "unrestricted");
    }
    strings(view.putArray("effective_allow"), plan.egress().effective().asStrings());
    view.put("ttl_seconds", plan.ttl().toSeconds());
    ObjectNode resources = view.putObject("resources");
    resources.put("cpus", plan.resources().cpus());
    resources.put("memory_mb", plan.resources().memoryMb());
    resources.put("pids", plan.resources().pids());
    view.put("require_runtime_class", plan.requireRuntimeClass());
    ArrayNode manifests = view.putArray("manifests");
    for (Manifest manifest : plan.manifests()) {
      ObjectNode m = manifests.addObject();
      m.put("kind", manifest.kind());
      m.put("name", manifest.name());
      m.set("body", mapper.valueToTree(manifest.body()));
    }
    return view;
  }

  ObjectNode run(RunView run) {
    RunRecord record = run.record();
    ObjectNode view = mapper.createObjectNode();
    view.put("run_id", record.runId());
    view.put("kind", record.kind().wireName());
    view.put("agent", record.agent());
    view.put("status", record.status().wireName());
    view.put("end", record.endReason());
    view.put("exit_status", record.exitStatus());
    view.put("backend", record.backend());
    view.put("runtime", record.runtime());
    view.set("command", record.command());
    view.put("created_at", time(record.createdAt()));
    view.put("started_at", time(record.startedAt()));
    view.put("ended_at", time(record.endedAt()));
    view.put("expires_at", time(record.expiresAt()));
    run.live()
        .ifPresent(
            live -> {
              view.put("isolation", isolation(live.isolation()));
              if (!live.detail().isEmpty()) {
                view.put("detail", live.detail());
              }
            });
    run.session()
        .ifPresent(
            session -> {
              view.put("idle_seconds", session.idleSeconds());
              view.put("idle_expires_at", time(session.idleExpiresAt()));
              view.put("steps", session.steps());
              session.warm().ifPresent(warm -> view.put("warm", warm));
            });
    view.put("output_tail", run.outputTail());
    run.live().ifPresent(live -> view.put("output_bytes", live.outputBytes()));
    ArrayNode egress = view.putArray("egress");
    run.egress().forEach(decision -> egress.add(PlainJson.node(decision)));
    view.put("egress_complete", run.egressComplete());
    if (run.egressNotListed() > 0) {
      view.put("egress_not_listed", run.egressNotListed());
    }
    return view;
  }

  /** The {@code runs} collection: a short line per run, newest first. */
  ObjectNode list(List<RunRecord> records) {
    ObjectNode body = mapper.createObjectNode();
    ArrayNode list = body.putArray("runs");
    for (RunRecord record : records) {
      ObjectNode item = list.addObject();
      item.put("run_id", record.runId());
      item.put("kind", record.kind().wireName());
      item.put("agent", record.agent());
      item.put("status", record.status().wireName());
      if (record.exitStatus() == null) {
        item.putNull("exit_status");
      } else {
        item.put("exit_status", record.exitStatus());
      }
      item.put("backend", record.backend());
      item.put("created_at", time(record.createdAt()));
      item.put("started_at", time(record.startedAt()));
      item.put("ended_at", time(record.endedAt()));
    }
    return body;
  }

  private static String isolation(Isolation isolation) {
    return isolation.name().toLowerCase(Locale.ROOT);
  }

  private static void strings(ArrayNode array, List<String> values) {
    values.forEach(array::add);
  }

  private static String time(Instant instant) {
    return instant == null ? null : instant.toString();
  }
}
