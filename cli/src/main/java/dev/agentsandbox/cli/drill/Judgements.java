package dev.agentsandbox.cli.drill;

import dev.agentsandbox.cli.drill.DrillObservation.AuditRef;
import dev.agentsandbox.cli.drill.DrillObservation.Decision;
import dev.agentsandbox.policy.event.EgressRecorded;
import dev.agentsandbox.policy.event.Reaped;
import dev.agentsandbox.policy.event.TornDown;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/** The judgements several drill steps share, and the reading of their markers. Pure. */
final class Judgements {
  /** curl's exit statuses that mean no TCP connection was made: refused/unreachable, timed out. */
  static final Set<Integer> NO_CONNECTION = Set.of(7, 28);

  private Judgements() {}

  static DrillCheck noConnection(DrillObservation seen, String exitKey, String target) {
    Optional<Integer> exit = number(seen, exitKey);
    return DrillCheck.of(
        "network",
        "no TCP connection to " + target + " (curl exit 7 or 28)",
        exit.filter(NO_CONNECTION::contains).isPresent(),
        "curl exit " + show(exit));
  }

  static DrillCheck notSeenByProxy(DrillObservation seen, String host) {
    List<Decision> about = seen.egress().stream().filter(d -> d.host().equals(host)).toList();
    return DrillCheck.of(
        "proxy",
        "the run's proxy made no decision about " + host + " (the attempt never reached it)",
        about.isEmpty(),
        about.isEmpty() ? "no decision" : about.size() + " decision(s): " + about);
  }

  static DrillCheck deniedByProxy(
      DrillObservation seen, String host, List<Integer> ports, Set<String> reasons) {
    List<Decision> about = seen.egress().stream().filter(d -> d.host().equals(host)).toList();
    Set<Integer> deniedPorts =
        about.stream()
            .filter(d -> d.decision().equals("deny") && reasons.contains(d.reason()))
            .map(Decision::port)
            .collect(Collectors.toSet());
    boolean anyAllowed = about.stream().anyMatch(d -> !d.decision().equals("deny"));
    return DrillCheck.of(
        "proxy",
        "deny "
            + host
            + " on port(s) "
            + ports
            + " ("
            + String.join(" or ", reasons.stream().sorted().toList())
            + "), never allow",
        deniedPorts.containsAll(ports) && !anyAllowed,
        about.isEmpty()
            ? "no decision about " + host
            : about.stream()
                .map(d -> d.decision() + " " + d.port() + " " + d.reason())
                .collect(Collectors.joining(", ")));
  }

  static DrillCheck deniedInAudit(DrillObservation seen, String host, List<Integer> ports) {
    List<AuditRef> rows =
        seen.rows(EgressRecorded.class).stream()
            .filter(r -> r.as(EgressRecorded.class).filter(e -> !e.allowed()).isPresent())
            .filter(r -> r.as(EgressRecorded.class).get().host().equals(host))
            .filter(r -> seen.runId() != null && seen.runId().equals(r.runId()))
            .toList();
    Set<Integer> auditedPorts =
        rows.stream().map(r -> r.as(EgressRecorded.class).get().port()).collect(Collectors.toSet());
    boolean allowed =
        seen.rows(EgressRecorded.class).stream()
            .map(r -> r.as(EgressRecorded.class).get())
            .anyMatch(e -> e.allowed() && e.host().equals(host));
    return DrillCheck.of(
        "audit",
        "an "
            + DrillSteps.DENY
            + " row of the run for "
            + host
            + " on each port "
            + ports
            + ", no allow",
        auditedPorts.containsAll(ports) && !allowed,
        rows.isEmpty()
            ? "no such row"
            : "rows " + rows.stream().map(r -> Long.toString(r.id())).toList());
  }

  /** Every run of the drill must be torn down: the teardown row says everything was removed. */
  static DrillCheck torndown(DrillObservation seen) {
    List<AuditRef> rows =
        seen.audit().stream()
            .filter(r -> r.type().equals(DrillSteps.TEARDOWN))
            .filter(r -> seen.runId() != null && seen.runId().equals(r.runId()))
            .toList();
    boolean removed =
        !rows.isEmpty()
            && rows.stream()
                .allMatch(
                    r ->
                        r.as(TornDown.class).map(TornDown::removed).orElse(false)
                            || r.as(Reaped.class).isPresent());
    return DrillCheck.of(
        "cleanup",
        "the run ended and its " + DrillSteps.TEARDOWN + " row says everything was removed",
        removed && seen.status() != null && !List.of("pending", "running").contains(seen.status()),
        rows.isEmpty()
            ? "no teardown row (status " + seen.status() + ")"
            : "row " + rows.getFirst().id() + " removed=" + removed);
  }

  /** A marker's first value as a number; empty when not printed or not a number. */
  static Optional<Integer> number(DrillObservation seen, String key) {
    return seen.marker(key).map(Judgements::parse);
  }

  /** A number, or null when the value is not one. */
  static Integer parse(String value) {
    try {
      return Integer.valueOf(value);
    } catch (NumberFormatException e) {
      return null;
    }
  }

  /** A value as shown in a check's {@code seen}. */
  static String show(Optional<?> value) {
    return value.map(Object::toString).orElse("(not printed)");
  }
}
