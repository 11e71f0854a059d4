package dev.agentsandbox.runs;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Egress settings an operator declares for the whole instance, outside any agent's configuration:
 * static name mappings for the proxies (air-gapped sites, tests) and the authorities the proxies
 * verify inspected hosts with. Internal destinations are not here: they belong to each agent's
 * governed configuration ({@code agents.NAME.internal}).
 *
 * @param hosts names the proxies resolve from this map instead of DNS
 * @param upstreamCa PEM certificates every run's proxy verifies inspected hosts with instead of the
 *     system's trust store ({@code serve --inspect-upstream-ca FILE}), if any
 */
public record OperatorEgress(Map<String, List<String>> hosts, Optional<String> upstreamCa) {
  /** No static names, the system's trust store. */
  public static final OperatorEgress NONE = new OperatorEgress(Map.of());

  public OperatorEgress {
    hosts = Map.copyOf(hosts);
    Objects.requireNonNull(upstreamCa, "upstreamCa");
  }

  /** Static names only. */
  public OperatorEgress(Map<String, List<String>> hosts) {
    this(hosts, Optional.empty());
  }
}
