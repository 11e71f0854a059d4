package dev.agentsandbox.server.evidence;

import dev.agentsandbox.policy.evidence.EgressObservation;
import dev.agentsandbox.store.EgressIndex;
import dev.agentsandbox.store.EgressTally;
import dev.agentsandbox.store.Store;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * An agent's recorded egress as the policy core's observations: the one place the server turns the
 * store's egress tallies ({@link EgressIndex}) into {@link EgressObservation}s. Thread-safe.
 */
public final class EgressEvidence {
  private final Store store;

  public EgressEvidence(Store store) {
    this.store = store;
  }

  /** {@code agent}'s decisions of this kind recorded at or after {@code since}. */
  public List<EgressObservation> of(String agent, Instant since, EgressIndex.Decisions which) {
    List<EgressObservation> observations = new ArrayList<>();
    store.egress().tally(agent, since, which, tally -> observations.add(observation(tally)));
    return observations;
  }

  private static EgressObservation observation(EgressTally tally) {
    return new EgressObservation(
        tally.decision().equals("allow")
            ? EgressObservation.Kind.ALLOW
            : EgressObservation.Kind.DENY,
        tally.host(),
        tally.port(),
        tally.reason(),
        tally.runId(),
        tally.count(),
        tally.first(),
        tally.last());
  }
}
