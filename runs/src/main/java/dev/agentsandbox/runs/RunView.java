package dev.agentsandbox.runs;

import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.store.RunRecord;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A run's state and, once it ended, its result: for a run this control plane holds, its live state;
 * for any other, what the store and the audit log kept.
 *
 * @param record the run as stored
 * @param live what only a live or recently finished run of this control plane knows; empty for a
 *     stored run
 * @param outputTail the redacted tail of the run's output
 * @param egress the proxy's decisions, oldest first, each a plain tree with its {@code decision}
 *     field: for a live run each one kept, as the proxy wrote it ({@code DecisionRecord}); for a
 *     stored run those the audit log holds in full ({@code EgressRecorded}'s listed form)
 * @param egressComplete whether {@code egress} holds every decision the proxy made
 * @param egressNotListed how many decisions a live run did not keep (0 for a stored run)
 * @param session what a session has beyond a run; empty for a one-shot run
 */
public record RunView(
    RunRecord record,
    Optional<Live> live,
    String outputTail,
    List<Map<String, Object>> egress,
    boolean egressComplete,
    long egressNotListed,
    Optional<Session> session) {

  public RunView {
    Objects.requireNonNull(record, "record");
    Objects.requireNonNull(live, "live");
    Objects.requireNonNull(outputTail, "outputTail");
    egress = List.copyOf(egress);
    Objects.requireNonNull(session, "session");
    if (session.isPresent() != record.isSession()) {
      throw new IllegalArgumentException("a session's view has session facts, a run's has none");
    }
  }

  /** A one-shot run's view. */
  public RunView(
      RunRecord record,
      Optional<Live> live,
      String outputTail,
      List<Map<String, Object>> egress,
      boolean egressComplete,
      long egressNotListed) {
    this(record, live, outputTail, egress, egressComplete, egressNotListed, Optional.empty());
  }

  /**
   * What a session has beyond a run.
   *
   * @param idleSeconds its idle time
   * @param idleExpiresAt when it ends idle if nothing happens; null once it is ending or ended
   * @param steps how many steps were started
   * @param warm whether it took a warm sandbox; empty when this control plane no longer holds it
   */
  public record Session(int idleSeconds, Instant idleExpiresAt, int steps, Optional<Boolean> warm) {
    public Session {
      Objects.requireNonNull(warm, "warm");
    }
  }

  /**
   * @param isolation how strongly the run's runtime isolates it
   * @param detail a note on the run's state (empty when there is none)
   * @param outputBytes how many bytes of output the run wrote in all
   */
  public record Live(Isolation isolation, String detail, long outputBytes) {}
}
