package dev.agentsandbox.runs;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.backend.Manifest;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.SandboxPlan;
import dev.agentsandbox.policy.run.Redactor;
import dev.agentsandbox.store.AuditLog;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.AuditRow;
import dev.agentsandbox.store.RunRecord;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The JSON the API returns for plans and runs; field names are the API's contract. */
final class RunViews {
  private RunViews() {}

  static ObjectNode plan(
      ObjectMapper json,
      RunSpec spec,
      SandboxPlan plan,
      Probe probe,
      boolean enabled,
      boolean configured) {
    ObjectNode view = json.createObjectNode();
    view.put("agent", spec.agent());
    view.put("enabled", enabled);
    view.put("agent_configured", configured);
    view.put("backend", plan.backend());
    view.put("runtime", plan.runtime());
    view.put("isolation", plan.isolation().name().toLowerCase(java.util.Locale.ROOT));
    view.put("available", probe.available());
    view.put("probe", probe.detail());
    view.put("image", spec.image());
    ArrayNode command = view.putArray("command");
    spec.command().forEach(command::add);
    strings(view.putArray("allow"), spec.egress().allow().asStrings());
    if (spec.egress().instanceAllow().isPresent()) {
      strings(view.putArray("instance_allow"), spec.egress().instanceAllow().get().asStrings());
    } else {
      view.put("instance_allow", "unrestricted");
    }
    strings(view.putArray("effective_allow"), spec.egress().effective().asStrings());
    view.put("ttl_seconds", spec.ttl().toSeconds());
    ObjectNode resources = view.putObject("resources");
    resources.put("cpus", spec.resources().cpus());
    resources.put("memory_mb", spec.resources().memoryMb());
    resources.put("pids", spec.resources().pids());
    view.put("require_runtime_class", spec.requireRuntimeClass());
    ArrayNode manifests = view.putArray("manifests");
    for (Manifest manifest : plan.manifests()) {
      ObjectNode m = manifests.addObject();
      m.put("kind", manifest.kind());
      m.put("name", manifest.name());
      m.set("body", json.valueToTree(manifest.body()));
    }
    return view;
  }

  static ObjectNode run(ObjectMapper json, LiveRun run) {
    RunRecord record = run.record();
    ObjectNode view = base(json, record);
    view.put("isolation", run.probe.isolation().name().toLowerCase(java.util.Locale.ROOT));
    if (!run.detail().isEmpty()) {
      view.put("detail", run.detail());
    }
    view.put("output_tail", record.outputTail() != null ? record.outputTail() : run.output.tail());
    view.put("output_bytes", run.output.totalBytes());
    ArrayNode egress = view.putArray("egress");
    run.egress.decisions().forEach(egress::add);
    view.put("egress_complete", run.egress.dropped() == 0);
    if (run.egress.dropped() > 0) {
      view.put("egress_not_listed", run.egress.dropped());
    }
    return view;
  }

  /**
   * A run this control plane no longer holds in memory: what the store kept, with the egress
   * decisions the audit log holds (every refusal and the first allow per host, not every allow).
   */
  static ObjectNode stored(ObjectMapper json, RunRecord record, AuditLog audit) {
    ObjectNode view = base(json, record);
    view.put("output_tail", record.outputTail() == null ? "" : record.outputTail());
    ArrayNode egress = view.putArray("egress");
    List<AuditRow> rows =
        audit.query(new AuditQuery("agent_sandbox.egress", null, record.runId(), null, null, 1000));
    for (AuditRow row : rows) {
      ObjectNode decision = egress.addObject();
      decision.put("decision", row.type().endsWith(".deny") ? "deny" : "allow");
      decision.setAll((ObjectNode) row.data().deepCopy());
    }
    view.put("egress_complete", false);
    return view;
  }

  private static ObjectNode base(ObjectMapper json, RunRecord record) {
    ObjectNode view = json.createObjectNode();
    view.put("run_id", record.runId());
    view.put("agent", record.agent());
    view.put("status", record.status().wireName());
    if (record.endReason() != null) {
      view.put("end", record.endReason());
    } else {
      view.putNull("end");
    }
    if (record.exitStatus() != null) {
      view.put("exit_status", record.exitStatus());
    } else {
      view.putNull("exit_status");
    }
    view.put("backend", record.backend());
    view.put("runtime", record.runtime());
    view.set("command", record.command());
    time(view, "created_at", record.createdAt());
    time(view, "started_at", record.startedAt());
    time(view, "ended_at", record.endedAt());
    time(view, "expires_at", record.expiresAt());
    return view;
  }

  static ObjectNode launchData(
      ObjectMapper json, RunSpec spec, Probe probe, RunRecord record, Redactor redactor) {
    ObjectNode data = json.createObjectNode();
    data.put("backend", record.backend());
    data.put("runtime", probe.runtime());
    data.put("isolation", probe.isolation().name().toLowerCase(java.util.Locale.ROOT));
    data.put("image", spec.image());
    data.set("command", command(json, redactor, spec.command()));
    strings(data.putArray("env_keys"), spec.env().keySet().stream().sorted().toList());
    strings(data.putArray("effective_allow"), spec.egress().effective().asStrings());
    data.put("ttl_seconds", spec.ttl().toSeconds());
    ObjectNode resources = data.putObject("resources");
    resources.put("cpus", spec.resources().cpus());
    resources.put("memory_mb", spec.resources().memoryMb());
    resources.put("pids", spec.resources().pids());
    data.put("require_runtime_class", spec.requireRuntimeClass());
    time(data, "expires_at", spec.expiresAt());
    return data;
  }

  /** The command as it may be stored and shown: secrets in arguments redacted. */
  static JsonNode command(ObjectMapper json, Redactor redactor, List<String> command) {
    ArrayNode out = json.createArrayNode();
    command.forEach(arg -> out.add(redactor.redact(arg)));
    return out;
  }

  private static void strings(ArrayNode array, List<String> values) {
    values.forEach(array::add);
  }

  private static void time(ObjectNode node, String field, Instant instant) {
    if (instant == null) {
      node.putNull(field);
    } else {
      node.put(field, instant.toString());
    }
  }

  /** An insertion-ordered map that forgets its eldest entry beyond {@code max}; not thread-safe. */
  static <K, V> Map<K, V> boundedMap(int max) {
    return new LinkedHashMap<>() {
      private static final long serialVersionUID = 1L;

      @Override
      protected boolean removeEldestEntry(Map.Entry<K, V> eldest) {
        return size() > max;
      }
    };
  }
}
