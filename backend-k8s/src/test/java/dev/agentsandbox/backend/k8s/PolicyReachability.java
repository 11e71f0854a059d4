package dev.agentsandbox.backend.k8s;

import io.fabric8.kubernetes.api.model.LabelSelector;
import io.fabric8.kubernetes.api.model.LabelSelectorRequirement;
import io.fabric8.kubernetes.api.model.networking.v1.IPBlock;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPeer;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPort;
import java.math.BigInteger;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Evaluates Kubernetes NetworkPolicy semantics over a set of policies, to answer "may this pod open
 * a connection to that endpoint on that port?". Follows networking.k8s.io/v1: a pod is isolated for
 * a direction when any policy selecting it lists that direction; an isolated pod's traffic is
 * allowed when some rule of a selecting policy allows it; a connection needs both the source's
 * egress and the destination pod's ingress. Peers with only a podSelector mean the policy's own
 * namespace; a namespaceSelector and a podSelector in one peer must both match.
 */
final class PolicyReachability {
  /** A pod or an address outside the cluster's pods (then {@code namespace} is empty). */
  record Endpoint(
      String name,
      Optional<String> namespace,
      Map<String, String> namespaceLabels,
      Map<String, String> podLabels,
      String ip,
      Map<String, Integer> namedPorts) {
    static Endpoint pod(String name, String namespace, Map<String, String> podLabels, String ip) {
      return new Endpoint(
          name,
          Optional.of(namespace),
          Map.of("kubernetes.io/metadata.name", namespace),
          podLabels,
          ip,
          Map.of());
    }

    static Endpoint address(String ip) {
      return new Endpoint(ip, Optional.empty(), Map.of(), Map.of(), ip, Map.of());
    }
  }

  private final List<NetworkPolicy> policies;

  PolicyReachability(List<NetworkPolicy> policies) {
    this.policies = List.copyOf(policies);
  }

  boolean canReach(Endpoint from, Endpoint to, int port, String protocol) {
    return egressAllows(from, to, port, protocol) && ingressAllows(from, to, port, protocol);
  }

  private boolean egressAllows(Endpoint from, Endpoint to, int port, String protocol) {
    if (from.namespace().isEmpty()) {
      return true;
    }
    List<NetworkPolicy> selecting = selecting(from, "Egress");
    if (selecting.isEmpty()) {
      return true;
    }
    for (NetworkPolicy policy : selecting) {
      if (policy.getSpec().getEgress() == null) {
        continue;
      }
      for (var rule : policy.getSpec().getEgress()) {
        if (peersMatch(policy, rule.getTo(), to)
            && portsMatch(rule.getPorts(), to, port, protocol)) {
          return true;
        }
      }
    }
    return false;
  }

  private boolean ingressAllows(Endpoint from, Endpoint to, int port, String protocol) {
    if (to.namespace().isEmpty()) {
      return true;
    }
    List<NetworkPolicy> selecting = selecting(to, "Ingress");
    if (selecting.isEmpty()) {
      return true;
    }
    for (NetworkPolicy policy : selecting) {
      if (policy.getSpec().getIngress() == null) {
        continue;
      }
      for (var rule : policy.getSpec().getIngress()) {
        if (peersMatch(policy, rule.getFrom(), from)
            && portsMatch(rule.getPorts(), to, port, protocol)) {
          return true;
        }
      }
    }
    return false;
  }

  private List<NetworkPolicy> selecting(Endpoint pod, String direction) {
    return policies.stream()
        .filter(p -> p.getMetadata().getNamespace().equals(pod.namespace().orElseThrow()))
        .filter(p -> matches(p.getSpec().getPodSelector(), pod.podLabels()))
        .filter(p -> types(p).contains(direction))
        .toList();
  }

  private static List<String> types(NetworkPolicy policy) {
    List<String> types = policy.getSpec().getPolicyTypes();
    if (types != null && !types.isEmpty()) {
      return types;
    }
    // Without policyTypes, Ingress always applies and Egress only when egress rules exist.
    return policy.getSpec().getEgress() == null || policy.getSpec().getEgress().isEmpty()
        ? List.of("Ingress")
        : List.of("Ingress", "Egress");
  }

  private boolean peersMatch(NetworkPolicy policy, List<NetworkPolicyPeer> peers, Endpoint other) {
    if (peers == null || peers.isEmpty()) {
      return true;
    }
    for (NetworkPolicyPeer peer : peers) {
      if (peer.getIpBlock() != null) {
        if (inBlock(peer.getIpBlock(), other.ip())) {
          return true;
        }
        continue;
      }
      if (other.namespace().isEmpty()) {
        continue;
      }
      boolean namespaceOk =
          peer.getNamespaceSelector() == null
              ? other.namespace().get().equals(policy.getMetadata().getNamespace())
              : matches(peer.getNamespaceSelector(), other.namespaceLabels());
      boolean podOk =
          peer.getPodSelector() == null || matches(peer.getPodSelector(), other.podLabels());
      if (namespaceOk && podOk) {
        return true;
      }
    }
    return false;
  }

  private static boolean portsMatch(
      List<NetworkPolicyPort> ports, Endpoint to, int port, String protocol) {
    if (ports == null || ports.isEmpty()) {
      return true;
    }
    for (NetworkPolicyPort candidate : ports) {
      String candidateProtocol = candidate.getProtocol() == null ? "TCP" : candidate.getProtocol();
      if (!candidateProtocol.equals(protocol)) {
        continue;
      }
      if (candidate.getPort() == null) {
        return true;
      }
      Integer number =
          candidate.getPort().getIntVal() != null
              ? candidate.getPort().getIntVal()
              : to.namedPorts().get(candidate.getPort().getStrVal());
      if (number == null) {
        continue;
      }
      int end = candidate.getEndPort() == null ? number : candidate.getEndPort();
      if (port >= number && port <= end) {
        return true;
      }
    }
    return false;
  }

  static boolean matches(LabelSelector selector, Map<String, String> labels) {
    if (selector == null) {
      return true;
    }
    if (selector.getMatchLabels() != null) {
      for (var entry : selector.getMatchLabels().entrySet()) {
        if (!entry.getValue().equals(labels.get(entry.getKey()))) {
          return false;
        }
      }
    }
    if (selector.getMatchExpressions() != null) {
      for (LabelSelectorRequirement requirement : selector.getMatchExpressions()) {
        String value = labels.get(requirement.getKey());
        boolean ok =
            switch (requirement.getOperator()) {
              case "In" -> value != null && requirement.getValues().contains(value);
              case "NotIn" -> value == null || !requirement.getValues().contains(value);
              case "Exists" -> value != null;
              case "DoesNotExist" -> value == null;
              default -> throw new IllegalArgumentException(requirement.getOperator());
            };
        if (!ok) {
          return false;
        }
      }
    }
    return true;
  }

  static boolean inBlock(IPBlock block, String ip) {
    if (!inCidr(block.getCidr(), ip)) {
      return false;
    }
    return block.getExcept() == null || block.getExcept().stream().noneMatch(e -> inCidr(e, ip));
  }

  static boolean inCidr(String cidr, String ip) {
    String[] parts = cidr.split("/");
    byte[] network = literal(parts[0]);
    byte[] address = literal(ip);
    if (network.length != address.length) {
      return false;
    }
    int bits = network.length * 8;
    int prefix = Integer.parseInt(parts[1]);
    BigInteger mask =
        BigInteger.ONE
            .shiftLeft(bits)
            .subtract(BigInteger.ONE)
            .shiftRight(prefix)
            .not()
            .and(BigInteger.ONE.shiftLeft(bits).subtract(BigInteger.ONE));
    return new BigInteger(1, network).and(mask).equals(new BigInteger(1, address).and(mask));
  }

  private static byte[] literal(String ip) {
    try {
      // Literals only: InetAddress parses them without a lookup.
      if (!ip.contains(":") && !ip.matches("[0-9.]+")) {
        throw new IllegalArgumentException("not an IP literal: " + ip);
      }
      return InetAddress.getByName(ip).getAddress();
    } catch (UnknownHostException e) {
      throw new IllegalArgumentException(ip, e);
    }
  }
}
