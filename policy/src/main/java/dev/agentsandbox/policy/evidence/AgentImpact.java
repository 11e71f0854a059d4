package dev.agentsandbox.policy.evidence;

import java.util.Objects;

/**
 * What a new version of either document would have changed for one agent's recorded egress.
 *
 * @param agent the agent
 * @param wouldAllow recorded refusals the new version would have let past the lists (the address
 *     checks after them still apply)
 * @param wouldRefuse recorded allowed connections the new version would refuse
 */
public record AgentImpact(String agent, ImpactSide wouldAllow, ImpactSide wouldRefuse) {
  public AgentImpact {
    Objects.requireNonNull(agent, "agent");
    Objects.requireNonNull(wouldAllow, "wouldAllow");
    Objects.requireNonNull(wouldRefuse, "wouldRefuse");
  }

  /** Whether the change alters nothing the record holds for this agent. */
  public boolean none() {
    return wouldAllow.none() && wouldRefuse.none();
  }
}
