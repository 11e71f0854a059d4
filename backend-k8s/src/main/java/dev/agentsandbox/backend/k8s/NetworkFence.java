package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.policy.config.InternalDestination;
import dev.agentsandbox.policy.net.AddressClassifier;
import dev.agentsandbox.policy.net.Cidr;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.LabelSelector;
import io.fabric8.kubernetes.api.model.LabelSelectorBuilder;
import io.fabric8.kubernetes.api.model.networking.v1.IPBlockBuilder;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyBuilder;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyEgressRule;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyEgressRuleBuilder;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPeer;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPeerBuilder;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPort;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPortBuilder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The three NetworkPolicies that fence one sandbox namespace: default deny for every pod, the agent
 * reaching only the proxy's port, and the proxy reaching only cluster DNS and public addresses.
 */
final class NetworkFence {
  /** The name of the policy that denies all traffic to and from every pod of the namespace. */
  static final String DEFAULT_DENY = "default-deny";

  /** The name of the policy that lets the agent reach the proxy's port and nothing else. */
  static final String AGENT_EGRESS = "agent-egress-to-proxy";

  /** The name of the policy for the proxy's ingress (from the agent) and egress (DNS, public). */
  static final String PROXY_FENCE = "proxy-fence";

  /** The name of a session's policy: the relay's port, from the control plane's pods only. */
  static final String SESSION_INGRESS = "session-ingress";

  /**
   * IPv4 ranges the proxy may never reach directly: every range the proxy's own address check
   * refuses ({@link AddressClassifier#FENCE_V4}: private, loopback, link-local and the metadata
   * services, CGNAT, documentation, benchmarking, multicast, reserved). The policy holds even if
   * the proxy were subverted.
   */
  static final List<String> IPV4_EXCEPT =
      AddressClassifier.FENCE_V4.stream().map(Cidr::toString).toList();

  /**
   * IPv6 ranges the proxy may never reach directly ({@link AddressClassifier#FENCE_V6}): everything
   * outside global unicast, the special-purpose blocks inside it and 6to4.
   */
  static final List<String> IPV6_EXCEPT =
      AddressClassifier.FENCE_V6.stream().map(Cidr::toString).toList();

  private final KubernetesBackendConfig config;

  NetworkFence(KubernetesBackendConfig config) {
    this.config = config;
  }

  /** Denies ingress and egress for every pod in the namespace; created before any pod. */
  NetworkPolicy defaultDeny(String namespace, Map<String, String> labels) {
    return new NetworkPolicyBuilder()
        .withNewMetadata()
        .withName(DEFAULT_DENY)
        .withNamespace(namespace)
        .withLabels(labels)
        .endMetadata()
        .withNewSpec()
        .withPodSelector(new LabelSelector())
        .withPolicyTypes("Ingress", "Egress")
        .endSpec()
        .build();
  }

  /** The agent may open TCP connections to the proxy pod's port, and to nothing else. */
  NetworkPolicy agentEgress(
      String namespace,
      Map<String, String> labels,
      Map<String, String> agentPod,
      Map<String, String> proxyPod) {
    return new NetworkPolicyBuilder()
        .withNewMetadata()
        .withName(AGENT_EGRESS)
        .withNamespace(namespace)
        .withLabels(labels)
        .endMetadata()
        .withNewSpec()
        .withPodSelector(selector(agentPod))
        .withPolicyTypes("Egress")
        .withEgress(
            new NetworkPolicyEgressRuleBuilder()
                .withTo(new NetworkPolicyPeerBuilder().withPodSelector(selector(proxyPod)).build())
                .withPorts(port("TCP", config.proxyPort()))
                .build())
        .endSpec()
        .build();
  }

  /**
   * The proxy accepts only the agent, on its port; it reaches cluster DNS (the DNS pods of the DNS
   * namespace, both in one peer so that neither alone opens anything) and public addresses, plus
   * the internal destinations of this run's agent, each in its own rule with its own ports: a range
   * as an ipBlock, a service as its namespace and pod labels in one peer, on the pods' ports.
   */
  NetworkPolicy proxyFence(
      String namespace,
      Map<String, String> labels,
      Map<String, String> agentPod,
      Map<String, String> proxyPod,
      List<InternalDestination> internal) {
    List<NetworkPolicyEgressRule> egress = new ArrayList<>();
    egress.add(
        new NetworkPolicyEgressRuleBuilder()
            .withTo(
                new NetworkPolicyPeerBuilder()
                    .withNamespaceSelector(
                        selector(Map.of("kubernetes.io/metadata.name", config.dnsNamespace())))
                    .withPodSelector(selector(config.dnsPodLabels()))
                    .build())
            .withPorts(port("UDP", 53), port("TCP", 53))
            .build());
    // The nodes (kubelet 10250) and the API server are out of the proxy's reach even when their
    // addresses are public, or inside a range the operator declared internal.
    List<Cidr> machinery =
        java.util.stream.Stream.concat(
                config.nodeCidrs().stream(), config.apiServerCidrs().stream())
            .map(Cidr::parse)
            .toList();
    List<NetworkPolicyPeer> publicPeers = new ArrayList<>();
    publicPeers.add(
        ipBlock("0.0.0.0/0", withMachinery(IPV4_EXCEPT, Cidr.parse("0.0.0.0/0"), machinery)));
    if (config.dualStack()) {
      publicPeers.add(ipBlock("::/0", withMachinery(IPV6_EXCEPT, Cidr.parse("::/0"), machinery)));
    }
    egress.add(new NetworkPolicyEgressRuleBuilder().withTo(publicPeers).build());
    for (InternalDestination destination : internal) {
      NetworkPolicyPeer peer;
      if (destination.cidr().isPresent()) {
        Cidr range = destination.cidr().get();
        if (machinery.stream().anyMatch(m -> m.covers(range))) {
          continue;
        }
        peer = ipBlock(range.toString(), withMachinery(List.of(), range, machinery));
      } else {
        InternalDestination.ClusterService service = destination.service().orElseThrow();
        peer =
            new NetworkPolicyPeerBuilder()
                .withNamespaceSelector(
                    selector(Map.of("kubernetes.io/metadata.name", service.namespace())))
                .withPodSelector(selector(service.podLabels()))
                .build();
      }
      egress.add(
          new NetworkPolicyEgressRuleBuilder()
              .withTo(peer)
              .withPorts(destination.podPorts().stream().map(p -> port("TCP", p)).toList())
              .build());
    }
    return new NetworkPolicyBuilder()
        .withNewMetadata()
        .withName(PROXY_FENCE)
        .withNamespace(namespace)
        .withLabels(labels)
        .endMetadata()
        .withNewSpec()
        .withPodSelector(selector(proxyPod))
        .withPolicyTypes("Ingress", "Egress")
        .addNewIngress()
        .withFrom(new NetworkPolicyPeerBuilder().withPodSelector(selector(agentPod)).build())
        .withPorts(port("TCP", config.proxyPort()))
        .endIngress()
        .withEgress(egress)
        .endSpec()
        .build();
  }

  /**
   * A session's only ingress: the agent pod's relay port, from the control plane's pods (its
   * namespace, by the name label the API server sets and nobody can change, and its pod labels, in
   * one peer so that neither alone opens anything), over TCP. Not from the run's own proxy, another
   * run's pods, or anything outside the cluster's pods. Egress is untouched: the agent still
   * reaches the proxy and nothing else (the relay's answers ride the control plane's connection).
   */
  NetworkPolicy sessionIngress(
      String namespace, Map<String, String> labels, Map<String, String> agentPod) {
    return new NetworkPolicyBuilder()
        .withNewMetadata()
        .withName(SESSION_INGRESS)
        .withNamespace(namespace)
        .withLabels(labels)
        .endMetadata()
        .withNewSpec()
        .withPodSelector(selector(agentPod))
        .withPolicyTypes("Ingress")
        .addNewIngress()
        .withFrom(
            new NetworkPolicyPeerBuilder()
                .withNamespaceSelector(
                    selector(Map.of("kubernetes.io/metadata.name", config.controlPlaneNamespace())))
                .withPodSelector(selector(config.sessions().controlPlanePodLabels()))
                .build())
        .withPorts(port("TCP", config.sessions().port()))
        .endIngress()
        .endSpec()
        .build();
  }

  /** {@code except} plus the cluster machinery's ranges that lie inside {@code block}. */
  private static List<String> withMachinery(List<String> except, Cidr block, List<Cidr> machinery) {
    List<String> all = new ArrayList<>(except);
    for (Cidr range : machinery) {
      if (block.covers(range) && !range.equals(block) && !all.contains(range.toString())) {
        all.add(range.toString());
      }
    }
    return all;
  }

  private static NetworkPolicyPeer ipBlock(String cidr, List<String> except) {
    return new NetworkPolicyPeerBuilder()
        .withIpBlock(new IPBlockBuilder().withCidr(cidr).withExcept(except).build())
        .build();
  }

  private static LabelSelector selector(Map<String, String> labels) {
    return new LabelSelectorBuilder().withMatchLabels(labels).build();
  }

  private static NetworkPolicyPort port(String protocol, int number) {
    return new NetworkPolicyPortBuilder()
        .withProtocol(protocol)
        .withPort(new IntOrString(number))
        .build();
  }
}
