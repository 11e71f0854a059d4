package dev.agentsandbox.policy.config;

import dev.agentsandbox.policy.AllowList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The instance egress policy: what the organisation allows each agent scope to reach. A sandbox
 * allow-list is narrowed by its agent's scope rule and can never widen it. A scope that the policy
 * does not name gets the {@code default} rule.
 *
 * @param scopes rules per scope name
 * @param defaultRule the rule for every scope not named
 */
public record EgressPolicy(SortedMap<String, ScopeRule> scopes, ScopeRule defaultRule) {

  /**
   * The policy in force before anyone set one: every scope unrestricted, so sandboxes get exactly
   * their own allow-lists.
   */
  public static final EgressPolicy DEFAULT =
      new EgressPolicy(new TreeMap<>(), ScopeRule.UNRESTRICTED);

  public EgressPolicy {
    Objects.requireNonNull(defaultRule, "defaultRule");
    scopes = Collections.unmodifiableSortedMap(new TreeMap<>(scopes));
  }

  /**
   * Reads a document parsed from JSON into plain Java values.
   *
   * @throws InvalidConfigException with every problem found, each at its JSON path
   */
  public static EgressPolicy read(Object tree) {
    return EgressPolicyReader.read(tree);
  }

  /** The rule for a scope: its own, or the default. */
  public ScopeRule ruleFor(String scope) {
    return scopes.getOrDefault(scope, defaultRule);
  }

  /** The agent's sandbox allow-list narrowed by its scope's rule. */
  public AllowList effectiveAllow(AgentSettings agent) {
    return ruleFor(agent.scope()).narrow(agent.allow());
  }

  /** The document as plain Java values, with the default written out. */
  public Map<String, Object> toTree() {
    Map<String, Object> tree = new LinkedHashMap<>();
    Map<String, Object> scopeTrees = new LinkedHashMap<>();
    scopes.forEach((name, rule) -> scopeTrees.put(name, ruleTree(rule)));
    tree.put("scopes", scopeTrees);
    tree.put("default", ruleTree(defaultRule));
    return tree;
  }

  private static Object ruleTree(ScopeRule rule) {
    return rule.allow()
        .<Object>map(list -> Map.of("allow", list.asStrings()))
        .orElse(EgressPolicyReader.UNRESTRICTED);
  }
}
