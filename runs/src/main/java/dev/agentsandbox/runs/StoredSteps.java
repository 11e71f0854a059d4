package dev.agentsandbox.runs;

import dev.agentsandbox.policy.event.EgressRecorded;
import dev.agentsandbox.policy.event.EventType;
import dev.agentsandbox.runs.audit.RecordedEvent;
import dev.agentsandbox.runs.session.StepEndReason;
import dev.agentsandbox.runs.session.StepView;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.AuditRow;
import dev.agentsandbox.store.StepRecord;
import dev.agentsandbox.store.Store;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Steps as the store and the audit log keep them, shown as the API shows a step: the stored record,
 * and the decisions the audit log attributes to it (every refusal, the session's first allow per
 * host).
 */
final class StoredSteps {
  private StoredSteps() {}

  /**
   * The decisions the audit log holds for a stored step: every refusal written in full, and the
   * session's first allow per host, whose rows name the step.
   */
  static List<EgressRecorded> decisions(Store store, String runId, int number) {
    List<EgressRecorded> out = new ArrayList<>();
    for (AuditRow row :
        store.audit().query(new AuditQuery(EventType.EGRESS, null, runId, null, null, 1000))) {
      Optional<EgressRecorded> decision = RecordedEvent.of(row).as(EgressRecorded.class);
      if (decision.isPresent()
          && decision.get().steps().contains(number)
          && out.size() < LiveStep.MAX_DECISIONS) {
        out.add(decision.get());
      }
    }
    return out;
  }

  static StepView withDecisions(StepView view, List<Map<String, Object>> decisions, int denied) {
    Optional<StepView.Output> output =
        view.output()
            .map(o -> new StepView.Output(o.stdout(), o.stderr(), o.truncated(), decisions));
    return new StepView(
        view.runId(),
        view.step(),
        view.command(),
        view.cwd(),
        view.background(),
        view.timeoutSeconds(),
        view.stdinBytes(),
        view.startedAt(),
        view.endedAt(),
        view.durationMs(),
        view.end(),
        view.exitStatus(),
        view.outputBytes(),
        denied,
        view.detail(),
        output);
  }

  /** A stored step as the API shows it. */
  static StepView view(StepRecord step, Optional<StepView.Output> output) {
    List<String> command = new ArrayList<>();
    step.command().forEach(arg -> command.add(arg.asText()));
    return new StepView(
        step.runId(),
        step.step(),
        command,
        step.cwd(),
        step.background(),
        step.timeoutSeconds(),
        step.stdinBytes(),
        step.startedAt(),
        step.endedAt(),
        step.durationMs(),
        Optional.ofNullable(step.endReason()).map(StepEndReason::fromWireName),
        step.exitStatus(),
        step.outputBytes(),
        step.egressDenied(),
        step.detail(),
        output);
  }
}
