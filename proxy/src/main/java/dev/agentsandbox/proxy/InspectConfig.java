package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.config.InspectPolicy;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * The inspected hosts a proxy serves, as its policy names them, with the values of the credentials
 * it injects, read from the policy's credentials folder when the policy was read. {@link
 * #toString()} never shows a value.
 *
 * @param policy the policy's {@code inspect} section
 * @param values each injected credential's value, by credential name
 */
public record InspectConfig(InspectPolicy policy, Map<String, String> values) {
  public InspectConfig {
    Objects.requireNonNull(policy, "policy");
    values = Map.copyOf(values);
    for (var host : policy.hosts()) {
      if (host.inject().isPresent() && !values.containsKey(host.inject().get().credential())) {
        throw new InvalidProxyConfigException(
            "inspect: no value was read for credential " + host.inject().get().credential());
      }
    }
  }

  @Override
  public String toString() {
    return "InspectConfig[hosts="
        + policy.hosts().stream().map(h -> h.host()).toList()
        + ", credentials="
        + new TreeMap<>(values).keySet()
        + " (values not shown)]";
  }
}
