package dev.agentsandbox.server.evidence;

import dev.agentsandbox.policy.evidence.AgentEgress;
import dev.agentsandbox.policy.evidence.AgentImpact;
import dev.agentsandbox.policy.evidence.EgressImpact;
import dev.agentsandbox.store.EgressIndex;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedSet;

/**
 * Computes a change's {@link ChangeImpact}: for each agent whose lists differ between the current
 * and the new version, its recorded egress in the window decided under both ({@link EgressImpact}).
 * Agents whose lists are unchanged are not read. Thread-safe.
 */
public final class ChangeImpacts {
  private final EgressEvidence evidence;

  public ChangeImpacts(EgressEvidence evidence) {
    this.evidence = evidence;
  }

  /**
   * The impact of moving every agent from its lists in {@code before} to those in {@code after}.
   */
  public ChangeImpact between(
      Map<String, AgentEgress> before, Map<String, AgentEgress> after, EvidenceWindow window) {
    SortedSet<String> changed = EgressImpact.changedAgents(before, after);
    List<AgentImpact> impacts = new ArrayList<>();
    for (String agent : changed) {
      impacts.add(
          EgressImpact.of(
              agent,
              Optional.ofNullable(before.get(agent)),
              Optional.ofNullable(after.get(agent)),
              evidence.of(agent, window.since(), EgressIndex.Decisions.BOTH)));
    }
    Set<String> configured = new HashSet<>(before.keySet());
    configured.addAll(after.keySet());
    configured.removeAll(changed);
    return new ChangeImpact(window, impacts, configured.size());
  }
}
