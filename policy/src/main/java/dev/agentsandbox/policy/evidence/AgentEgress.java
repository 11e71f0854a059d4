package dev.agentsandbox.policy.evidence;

import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.EgressPolicy;
import dev.agentsandbox.policy.config.SandboxConfig;
import dev.agentsandbox.policy.config.ScopeRule;
import dev.agentsandbox.policy.net.EgressDecider;
import java.util.Objects;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The two lists one agent's proxy applies: its sandbox allow-list and its scope's instance egress
 * policy rule. Two versions of either document are compared through these.
 *
 * @param allow the agent's sandbox allow-list
 * @param rule the instance egress policy rule of the agent's scope
 */
public record AgentEgress(AllowList allow, ScopeRule rule) {
  public AgentEgress {
    Objects.requireNonNull(allow, "allow");
    Objects.requireNonNull(rule, "rule");
  }

  /** Each configured agent's lists under these two documents. */
  public static SortedMap<String, AgentEgress> of(SandboxConfig config, EgressPolicy policy) {
    SortedMap<String, AgentEgress> agents = new TreeMap<>();
    config
        .agents()
        .forEach(
            (name, settings) ->
                agents.put(
                    name, new AgentEgress(settings.allow(), policy.ruleFor(settings.scope()))));
    return agents;
  }

  /** The proxy's decision function for these lists (steps 1 to 5: nothing resolved). */
  public EgressDecider decider() {
    return new EgressDecider(allow, rule.allow());
  }
}
