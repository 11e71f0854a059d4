package dev.agentsandbox.server.governance;

import dev.agentsandbox.policy.config.EgressPolicy;
import dev.agentsandbox.policy.config.Loosening;
import dev.agentsandbox.policy.config.Loosenings;
import dev.agentsandbox.policy.config.SandboxConfig;
import java.util.List;
import java.util.Map;
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
 * @param <T> the model type
 */
public record GovernedDocument<T>(
    String key,
    T defaults,
    Function<Object, T> reader,
    Function<T, Map<String, Object>> writer,
    BiFunction<T, T, List<Loosening>> loosenings) {

  /** The agent sandbox configuration. */
  public static final GovernedDocument<SandboxConfig> SANDBOX =
      new GovernedDocument<>(
          "agent-sandbox",
          SandboxConfig.DEFAULT,
          SandboxConfig::read,
          SandboxConfig::toTree,
          Loosenings::between);

  /** The instance egress policy. */
  public static final GovernedDocument<EgressPolicy> EGRESS_POLICY =
      new GovernedDocument<>(
          "egress-policy",
          EgressPolicy.DEFAULT,
          EgressPolicy::read,
          EgressPolicy::toTree,
          Loosenings::between);
}
