package dev.agentsandbox.policy.governance;

import dev.agentsandbox.policy.config.EgressPolicy;
import dev.agentsandbox.policy.config.Loosening;
import dev.agentsandbox.policy.config.Loosenings;
import dev.agentsandbox.policy.config.SandboxConfig;
import dev.agentsandbox.policy.evidence.AgentEgress;
import dev.agentsandbox.policy.evidence.EgressImpact;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * A kind of configuration document under governance: how it is stored, read, written and compared.
 *
 * @param key the store key and the {@code config} field of its audit rows
 * @param defaults the document in force before anyone saved one
 * @param reader reads plain JSON values into the model (throws {@code InvalidConfigException})
 * @param writer writes the model as plain JSON values
 * @param loosenings every loosening between two versions
 * @param egress each configured agent's lists under a version of this document, the other one as it
 *     is now: what {@link EgressImpact} compares between the current version and a new one
 * @param <T> the model type
 */
public record GovernedDocument<T>(
    String key,
    T defaults,
    Function<Object, T> reader,
    Function<T, Map<String, Object>> writer,
    BiFunction<T, T, List<Loosening>> loosenings,
    BiFunction<T, Documents, SortedMap<String, AgentEgress>> egress) {

  /** Both governed documents as they are now. */
  public record Documents(SandboxConfig sandbox, EgressPolicy policy) {}

  /** The agent sandbox configuration. */
  public static final GovernedDocument<SandboxConfig> SANDBOX =
      new GovernedDocument<>(
          "agent-sandbox",
          SandboxConfig.DEFAULT,
          SandboxConfig::read,
          SandboxConfig::toTree,
          Loosenings::between,
          (config, now) -> AgentEgress.of(config, now.policy()));

  /** The instance egress policy. */
  public static final GovernedDocument<EgressPolicy> EGRESS_POLICY =
      new GovernedDocument<>(
          "egress-policy",
          EgressPolicy.DEFAULT,
          EgressPolicy::read,
          EgressPolicy::toTree,
          Loosenings::between,
          (policy, now) -> AgentEgress.of(now.sandbox(), policy));
}
