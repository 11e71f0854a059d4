package dev.agentsandbox.runs;

import java.util.List;
import java.util.Map;

/**
 * Egress settings an operator declares for the whole instance, outside any agent's configuration:
 * static name mappings for the proxies (air-gapped sites, tests). Internal destinations are not
 * here: they belong to each agent's governed configuration ({@code agents.NAME.internal}).
 *
 * @param hosts names the proxies resolve from this map instead of DNS
 */
public record OperatorEgress(Map<String, List<String>> hosts) {
  /** No static names. */
  public static final OperatorEgress NONE = new OperatorEgress(Map.of());

  public OperatorEgress {
    hosts = Map.copyOf(hosts);
  }
}
