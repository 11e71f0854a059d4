package dev.agentsandbox.policy.config;

import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The token scopes the API knows, and which of them a token limited to agents may hold: the server
 * checks them on every request, and {@code token create} on the command line refuses an unknown or
 * instance-wide one before it writes a token.
 */
public final class Scopes {
  /** Read configuration and policy. */
  public static final String READ = "agent_sandbox.read";

  /** Change configuration and policy in ways that tighten them. */
  public static final String CONFIGURE = "agent_sandbox.configure";

  /** Plan and run workloads. */
  public static final String RUN = "agent_sandbox.run";

  /** Read and export the audit log. */
  public static final String AUDIT_READ = "audit.read";

  /** Make changes that loosen configuration or policy (with a reason). */
  public static final String GOVERNANCE_WEAKEN = "governance.weaken";

  /** Every scope, in the order documented. */
  public static final Set<String> ALL =
      Collections.unmodifiableSet(
          new LinkedHashSet<>(List.of(READ, CONFIGURE, RUN, AUDIT_READ, GOVERNANCE_WEAKEN)));

  /**
   * The scopes a token limited to agents may hold: reading and running, which the API cuts to its
   * agents. The others are instance-wide (the whole configuration, the whole audit log) and would
   * show or change other agents' settings (docs/architecture.md invariant 13).
   */
  public static final Set<String> AGENT_SCOPED = Set.of(READ, RUN);

  /**
   * The route "scope" of an endpoint that needs a valid token and no scope: who the token is. It is
   * no grantable scope (a scope cannot be {@code *}).
   */
  public static final String ANY_TOKEN = "*";

  /** The scopes of {@code scopes} that a token limited to agents may not hold, in order. */
  public static List<String> instanceWide(Set<String> scopes) {
    return scopes.stream().filter(scope -> !AGENT_SCOPED.contains(scope)).sorted().toList();
  }

  private Scopes() {}
}
