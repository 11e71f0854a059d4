package dev.agentsandbox.policy.config;

import dev.agentsandbox.policy.net.Cidr;
import dev.agentsandbox.policy.net.InternalRule;
import java.util.Collections;
import java.util.Objects;
import java.util.Optional;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * One internal destination an agent's runs may reach besides public addresses, with its ports: an
 * address range (a git mirror outside the cluster), or an in-cluster service named by its namespace
 * and pod labels (the LLM gateway). The proxy admits it only on {@link #ports}; on Kubernetes it is
 * also one NetworkPolicy peer of that run's proxy, with its ports. Part of the governed
 * configuration: adding one, widening its range or selector, or adding a port is a loosening.
 *
 * @param name the destination's name in the agent's configuration
 * @param cidr the address range, for a range destination
 * @param service the in-cluster service, for a service destination
 * @param ports the ports the proxy dials (for a service, the Service's ports)
 */
public record InternalDestination(
    String name, Optional<Cidr> cidr, Optional<ClusterService> service, SortedSet<Integer> ports) {
  /** A destination's name: what a credential or agent name may be. */
  public static final Pattern NAME = Pattern.compile("[a-z0-9](?:[a-z0-9._-]{0,61}[a-z0-9])?");

  public InternalDestination {
    Objects.requireNonNull(name, "name");
    ports = Collections.unmodifiableSortedSet(new TreeSet<>(ports));
    // The proxy's rule checks the range and the ports; one rule set for config and proxy alike.
    rule(cidr, service, ports);
  }

  /** A range destination. */
  public static InternalDestination range(String name, Cidr cidr, SortedSet<Integer> ports) {
    return new InternalDestination(name, Optional.of(cidr), Optional.empty(), ports);
  }

  /** A range destination written as an operator writes it ({@code 10.20.1.0/24}). */
  public static InternalDestination range(String name, String cidr, Integer... ports) {
    return range(name, Cidr.parse(cidr), new TreeSet<>(java.util.List.of(ports)));
  }

  /** A service destination. */
  public static InternalDestination service(
      String name, ClusterService service, SortedSet<Integer> ports) {
    return new InternalDestination(name, Optional.empty(), Optional.of(service), ports);
  }

  /** The ports the destination's pods listen on: a service's own, else {@link #ports}. */
  public SortedSet<Integer> podPorts() {
    return service.map(ClusterService::podPorts).filter(p -> !p.isEmpty()).orElse(ports);
  }

  /** What the proxy applies for this destination. */
  public InternalRule rule() {
    return rule(cidr, service, ports);
  }

  private static InternalRule rule(
      Optional<Cidr> cidr, Optional<ClusterService> service, SortedSet<Integer> ports) {
    if (cidr.isPresent() == service.isPresent()) {
      throw new IllegalArgumentException("an internal destination is a cidr or a service");
    }
    return cidr.map(range -> InternalRule.range(range, ports))
        .orElseGet(() -> InternalRule.host(service.get().host(), ports));
  }

  /**
   * An in-cluster service: the pods its NetworkPolicy peer selects, and the name the agent uses.
   *
   * @param namespace the namespace the service's pods run in
   * @param podLabels the labels that select them (at least one)
   * @param host the cluster DNS name the agent connects to, such as {@code
   *     platform-gateway.platform.svc.cluster.local}
   * @param podPorts the ports the pods listen on, when the Service maps its ports to others; else
   *     the destination's ports
   */
  public record ClusterService(
      String namespace,
      SortedMap<String, String> podLabels,
      String host,
      SortedSet<Integer> podPorts) {
    public ClusterService {
      Objects.requireNonNull(namespace, "namespace");
      Objects.requireNonNull(host, "host");
      podLabels = Collections.unmodifiableSortedMap(new TreeMap<>(podLabels));
      podPorts = Collections.unmodifiableSortedSet(new TreeSet<>(podPorts));
      if (podLabels.isEmpty()) {
        throw new IllegalArgumentException("a service destination selects pods by label");
      }
      if (podPorts.size() > InternalRule.MAX_PORTS
          || podPorts.stream().anyMatch(p -> p < 1 || p > 65535)) {
        throw new IllegalArgumentException(
            "pod ports: at most " + InternalRule.MAX_PORTS + ", each 1 to 65535");
      }
    }
  }
}
