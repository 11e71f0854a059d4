package dev.agentsandbox.runs;

import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.SandboxPlan;
import dev.agentsandbox.policy.event.DecisionRecord;
import dev.agentsandbox.policy.event.EgressRecorded;
import dev.agentsandbox.policy.event.EventType;
import dev.agentsandbox.runs.audit.RecordedEvent;
import dev.agentsandbox.store.AuditLog;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.AuditRow;
import dev.agentsandbox.store.RunRecord;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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
    Optional<RunView.Session> session =
        run.session.map(
            s ->
                new RunView.Session(
                    s.idleSeconds,
                    record.status().active() ? s.idleExpiresAt() : null,
                    s.stepsStarted(),
                    Optional.of(run.prepared.isPresent())));
    return new RunView(
        record,
        Optional.of(new RunView.Live(run.probe.isolation(), run.detail(), run.output.totalBytes())),
        record.outputTail() != null ? record.outputTail() : run.output.tail(),
        run.egress.decisions().stream().map(DecisionRecord::toTree).toList(),
        run.egress.dropped() == 0,
        run.egress.dropped(),
        session);
  }

  /**
   * A run this control plane no longer holds in memory: what the store kept, with the egress
   * decisions the audit log holds in full (each refusal within the run's limits and the first allow
   * per host, not every allow; refusals only counted are not listed).
   */
  static RunView stored(RunRecord record, AuditLog audit, int steps) {
    List<Map<String, Object>> egress = new ArrayList<>();
    for (AuditRow row :
        audit.query(new AuditQuery(EventType.EGRESS, null, record.runId(), null, null, 1000))) {
      RecordedEvent.of(row).as(EgressRecorded.class).ifPresent(d -> egress.add(d.listedTree()));
    }
    Optional<RunView.Session> session =
        record.isSession()
            ? Optional.of(new RunView.Session(record.idleSeconds(), null, steps, Optional.empty()))
            : Optional.empty();
    return new RunView(
        record,
        Optional.empty(),
        record.outputTail() == null ? "" : record.outputTail(),
        egress,
        false,
        0,
        session);
  }
}
