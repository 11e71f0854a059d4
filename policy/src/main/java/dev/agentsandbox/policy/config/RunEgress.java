package dev.agentsandbox.policy.config;

import dev.agentsandbox.policy.AllowList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What a run's egress proxy is given: the agent's sandbox allow-list, the instance egress policy of
 * the agent's scope (empty when unrestricted), the agent's internal destinations with their ports,
 * and the operator's static name mappings. The proxy applies both lists, so a sandbox list can only
 * narrow the instance policy.
 *
 * @param allow the agent's sandbox allow-list
 * @param instanceAllow the instance egress policy for the agent's scope; empty means unrestricted
 * @param internal the agent's internal destinations that allowed names may resolve to, each on its
 *     own ports
 * @param hosts static name-to-address mappings the proxy uses instead of DNS: when there are any,
 *     the proxy resolves every name from them alone (tests, air-gapped sites); none means DNS
 * @param inspect the agent's inspected hosts, whose TLS the proxy terminates
 * @param upstreamCa the operator's PEM certificates the proxy verifies inspected hosts with instead
 *     of the system's trust store, if any
 */
public record RunEgress(
    AllowList allow,
    Optional<AllowList> instanceAllow,
    List<InternalDestination> internal,
    Map<String, List<String>> hosts,
    List<InspectedHost> inspect,
    Optional<String> upstreamCa) {
  public RunEgress {
    Objects.requireNonNull(allow, "allow");
    Objects.requireNonNull(instanceAllow, "instanceAllow");
    internal = List.copyOf(internal);
    hosts = Map.copyOf(hosts);
    inspect = List.copyOf(inspect);
    Objects.requireNonNull(upstreamCa, "upstreamCa");
  }

  /** The egress of a run that inspects no host. */
  public RunEgress(
      AllowList allow,
      Optional<AllowList> instanceAllow,
      List<InternalDestination> internal,
      Map<String, List<String>> hosts) {
    this(allow, instanceAllow, internal, hosts, List.of(), Optional.empty());
  }

  /** The names of the credentials the proxy injects, which the workload gets as placeholders. */
  public java.util.SortedSet<String> proxyHeldCredentials() {
    java.util.TreeSet<String> names = new java.util.TreeSet<>();
    inspect.forEach(h -> h.inject().ifPresent(i -> names.add(i.credential())));
    return names;
  }

  /** The address ranges among the internal destinations, as written ({@code 10.20.1.0/24}). */
  public List<String> internalCidrs() {
    return internal.stream().flatMap(d -> d.cidr().stream()).map(Object::toString).toList();
  }

  /** The allow-list that will really apply: the sandbox list narrowed by the instance policy. */
  public AllowList effective() {
    return instanceAllow.map(allow::intersect).orElse(allow);
  }
}
