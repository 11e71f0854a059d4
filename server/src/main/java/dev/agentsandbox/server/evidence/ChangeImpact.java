package dev.agentsandbox.server.evidence;

import dev.agentsandbox.policy.evidence.AgentImpact;
import java.util.List;
import java.util.Objects;

/**
 * What a new version of a governed document would have done to the recorded egress of each agent
 * whose lists it changes.
 *
 * @param window the stretch of the audit log read
 * @param agents one impact per agent whose lists differ, by name
 * @param agentsUnchanged configured agents whose lists the change leaves as they are
 */
public record ChangeImpact(EvidenceWindow window, List<AgentImpact> agents, int agentsUnchanged) {
  public ChangeImpact {
    Objects.requireNonNull(window, "window");
    agents = List.copyOf(agents);
  }
}
