package dev.agentsandbox.runs;

import java.util.List;
import java.util.Map;

/**
 * Egress settings an operator declares for the whole instance, outside any agent's allow-list:
 * internal destinations that allowed names may resolve to (an LLM gateway, a package mirror), and
 * static name mappings for the proxies (air-gapped sites, tests).
 *
 * @param internalCidrs ranges the proxies treat as permitted destinations for allowed names
 * @param hosts names the proxies resolve from this map instead of DNS
 */
public record OperatorEgress(List<String> internalCidrs, Map<String, List<String>> hosts) {
  /** No internal destinations, no static names. */
  public static final OperatorEgress NONE = new OperatorEgress(List.of(), Map.of());

  public OperatorEgress {
    internalCidrs = List.copyOf(internalCidrs);
    hosts = Map.copyOf(hosts);
  }
}
