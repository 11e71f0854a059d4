package dev.agentsandbox.server.evidence;

import dev.agentsandbox.policy.evidence.EgressObservation;
import dev.agentsandbox.store.EgressIndex;
import dev.agentsandbox.store.EgressTally;
import dev.agentsandbox.store.Store;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * An agent's recorded egress as the policy core's observations: the one place the server turns the
 * store's egress tallies ({@link EgressIndex}) into {@link EgressObservation}s. Thread-safe.
 */
public final class EgressEvidence {
  private final Store store;

  public EgressEvidence(Store store) {
    this.store = store;
  }

  /**
   * {@code agent}'s decisions of this kind recorded at or after {@code since}. Hosts, reasons and
   * run ids repeat across rows; each distinct one is kept once, so the tallies compare them by
   * reference first and the list holds each text once.
   */
  public List<EgressObservation> of(String agent, Instant since, EgressIndex.Decisions which) {
    List<EgressObservation> observations = new ArrayList<>();
    Map<String, String> texts = new HashMap<>();
    store.egress().scan(agent, since, which, tally -> observations.add(observation(tally, texts)));
    return observations;
  }

  private static EgressObservation observation(EgressTally tally, Map<String, String> texts) {
    return new EgressObservation(
        tally.decision().equals("allow")
            ? EgressObservation.Kind.ALLOW
            : EgressObservation.Kind.DENY,
        texts.computeIfAbsent(tally.host(), t -> t),
        tally.port(),
        texts.computeIfAbsent(tally.reason(), t -> t),
        tally.runId() == null ? null : texts.computeIfAbsent(tally.runId(), t -> t),
        tally.count(),
        tally.first(),
        tally.last());
  }
}
