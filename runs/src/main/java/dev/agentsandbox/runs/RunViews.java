package dev.agentsandbox.runs;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.SandboxPlan;
import dev.agentsandbox.store.AuditLog;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.AuditRow;
import dev.agentsandbox.store.RunRecord;
import java.util.List;
import java.util.Optional;

/** The typed views of plans and runs; the API renders them (in {@code server}). */
final class RunViews {
  private RunViews() {}

  static PlanView plan(
      RunSpec spec,
      SandboxPlan plan,
      Probe probe,
      List<String> stillProbing,
      boolean enabled,
      boolean configured) {
    return new PlanView(
        spec.agent(),
        enabled,
        configured,
        plan.backend(),
        plan.runtime(),
        plan.isolation(),
        probe.available(),
        probe.detail(),
        stillProbing,
        spec.image(),
        spec.command(),
        spec.egress(),
        spec.resources(),
        spec.ttl(),
        spec.requireRuntimeClass(),
        plan.manifests());
  }

  static RunView run(LiveRun run) {
    RunRecord record = run.record();
    return new RunView(
        record,
        Optional.of(new RunView.Live(run.probe.isolation(), run.detail(), run.output.totalBytes())),
        record.outputTail() != null ? record.outputTail() : run.output.tail(),
        run.egress.decisions(),
        run.egress.dropped() == 0,
        run.egress.dropped());
  }

  /**
   * A run this control plane no longer holds in memory: what the store kept, with the egress
   * decisions the audit log holds (every refusal and the first allow per host, not every allow).
   */
  static RunView stored(ObjectMapper json, RunRecord record, AuditLog audit) {
    List<AuditRow> rows =
        audit.query(new AuditQuery(EgressRecorder.EGRESS, null, record.runId(), null, null, 1000));
    List<JsonNode> egress =
        rows.stream()
            .map(
                row -> {
                  // The audit row holds the proxy's decision line less its decision field, which
                  // the row's type carries.
                  ObjectNode decision = json.createObjectNode();
                  decision.put(
                      "decision", row.type().equals(EgressRecorder.DENY) ? "deny" : "allow");
                  decision.setAll((ObjectNode) row.data().deepCopy());
                  return (JsonNode) decision;
                })
            .toList();
    return new RunView(
        record,
        Optional.empty(),
        record.outputTail() == null ? "" : record.outputTail(),
        egress,
        false,
        0);
  }
}
