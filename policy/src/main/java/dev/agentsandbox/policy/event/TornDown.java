package dev.agentsandbox.policy.event;

import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * {@code agent_sandbox.teardown} written by the run itself, once the removal of its sandbox has
 * ended (after its result was answered): how it ended, whether everything was removed, and its
 * output and egress totals.
 *
 * @param end how the run ended ({@code exit}, {@code deadline}, {@code killed}, {@code error}, ...)
 * @param exitStatus the workload's exit status, when there is one
 * @param backend the run's backend
 * @param runtime the runtime it ran under
 * @param removed whether everything the run created was removed
 * @param note why nothing was removed by the run (its launch failed)
 * @param problem why the removal failed
 * @param outputBytes bytes of output the workload wrote
 * @param egressDecisions decisions the proxy reported
 * @param egress the exact egress totals behind the rows (absent in rows written before they were
 *     counted)
 */
public record TornDown(
    String end,
    Optional<Integer> exitStatus,
    String backend,
    String runtime,
    boolean removed,
    Optional<String> note,
    Optional<String> problem,
    long outputBytes,
    long egressDecisions,
    Optional<EgressTotals> egress)
    implements RunEvent {

  /**
   * Exact egress totals of a run, whatever its rows hold.
   *
   * @param denied every refusal the proxy reported
   * @param deniedCounted those in {@code agent_sandbox.egress.deny.counted} rows, not in full
   * @param allowedHostsNotRecorded allowed hosts past the run's limit of first-allow rows
   */
  public record EgressTotals(long denied, long deniedCounted, long allowedHostsNotRecorded) {
    public EgressTotals {
      if (deniedCounted > denied || deniedCounted < 0 || allowedHostsNotRecorded < 0) {
        throw new IllegalArgumentException("egress totals cannot be negative or count more");
      }
    }

    /** Refusals written as rows of their own. */
    public long deniedInFull() {
      return denied - deniedCounted;
    }
  }

  public TornDown {
    Objects.requireNonNull(end, "end");
    Objects.requireNonNull(exitStatus, "exitStatus");
    Objects.requireNonNull(backend, "backend");
    Objects.requireNonNull(runtime, "runtime");
    Objects.requireNonNull(note, "note");
    Objects.requireNonNull(problem, "problem");
    Objects.requireNonNull(egress, "egress");
  }

  @Override
  public EventType type() {
    return EventType.TEARDOWN;
  }

  @Override
  public Map<String, Object> toTree() {
    Fields.Tree tree =
        Fields.tree()
            .put("end", end)
            .putIfPresent("exit_status", exitStatus)
            .put("backend", backend)
            .put("runtime", runtime)
            .put("removed", removed)
            .putIfPresent("note", note)
            .putIfPresent("problem", problem)
            .put("output_bytes", outputBytes)
            .put("egress_decisions", egressDecisions);
    egress.ifPresent(
        totals ->
            tree.put("egress_denied", totals.denied())
                .put("egress_denied_counted", totals.deniedCounted())
                .put("egress_allowed_hosts_not_recorded", totals.allowedHostsNotRecorded()));
    return tree.build();
  }

  static TornDown read(Object data) {
    Fields f = Fields.of(EventType.TEARDOWN, data);
    Optional<EgressTotals> totals =
        f.has("egress_denied")
            ? Optional.of(
                new EgressTotals(
                    f.whole("egress_denied"),
                    f.whole("egress_denied_counted"),
                    f.whole("egress_allowed_hosts_not_recorded")))
            : Optional.empty();
    TornDown event =
        new TornDown(
            f.string("end"),
            f.optionalInteger("exit_status"),
            f.string("backend"),
            f.string("runtime"),
            f.bool("removed"),
            f.optionalString("note"),
            f.optionalString("problem"),
            f.whole("output_bytes"),
            f.whole("egress_decisions"),
            totals);
    f.done();
    return event;
  }
}
