package dev.agentsandbox.policy.config;

import dev.agentsandbox.policy.AllowList;
import java.util.Optional;

/**
 * What the instance egress policy allows one scope: everything (unrestricted), or an allow-list.
 *
 * @param allow the allow-list, or empty when the scope is unrestricted
 */
public record ScopeRule(Optional<AllowList> allow) {
  /** The rule that restricts nothing. */
  public static final ScopeRule UNRESTRICTED = new ScopeRule(Optional.empty());

  public ScopeRule {
    allow = Optional.ofNullable(allow).flatMap(a -> a);
  }

  /** The rule allowing exactly this list. */
  public static ScopeRule of(AllowList allow) {
    return new ScopeRule(Optional.of(allow));
  }

  /** Whether the rule restricts nothing. */
  public boolean unrestricted() {
    return allow.isEmpty();
  }

  /** The sandbox list narrowed by this rule: itself when unrestricted, else the intersection. */
  public AllowList narrow(AllowList sandbox) {
    return allow.map(sandbox::intersect).orElse(sandbox);
  }
}
