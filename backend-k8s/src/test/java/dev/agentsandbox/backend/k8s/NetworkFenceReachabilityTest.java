package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.backend.k8s.PolicyReachability.Endpoint;
import io.fabric8.kubernetes.api.model.LabelSelector;
import io.fabric8.kubernetes.api.model.batch.v1.Job;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyBuilder;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyEgressRuleBuilder;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Computes who can reach what from the NetworkPolicies the backend generates, so that a policy edit
 * that reopens the fence fails the build. Nothing here sends a packet.
 */
class NetworkFenceReachabilityTest {
  private static final String NS = "agent-run-r42";

  /** The mirror's /16 on 443, a /24 inside it on 22 only, and the LLM gateway service. */
  private static final List<dev.agentsandbox.policy.config.InternalDestination> INTERNAL =
      List.of(
          Specs.range("mirror", "10.20.0.0/16", 443),
          Specs.range("mirror-ssh", "10.20.9.0/24", 22),
          Specs.GATEWAY);

  private static final KubernetesBundle BUNDLE =
      new BundleFactory(Specs.config().toBuilder().dualStack(true).build())
          .build(
              Specs.spec("r42", INTERNAL, false), Optional.of("gvisor"), Optional.of("10.43.7.9"));

  private static final Endpoint AGENT =
      Endpoint.pod(
          "agent",
          NS,
          BUNDLE.get(Job.class, "agent").getSpec().getTemplate().getMetadata().getLabels(),
          "10.42.0.11");
  private static final Endpoint PROXY =
      Endpoint.pod(
          "proxy",
          NS,
          BUNDLE
              .get(io.fabric8.kubernetes.api.model.Pod.class, BundleFactory.PROXY)
              .getMetadata()
              .getLabels(),
          "10.42.0.12");
  private static final Endpoint DNS =
      Endpoint.pod("coredns", "kube-system", Map.of("k8s-app", "kube-dns"), "10.42.0.3");
  private static final Endpoint METRICS =
      Endpoint.pod(
          "metrics-server", "kube-system", Map.of("k8s-app", "metrics-server"), "10.42.0.4");
  private static final Endpoint DNS_LOOKALIKE =
      Endpoint.pod("fake-dns", "agent-run-other", Map.of("k8s-app", "kube-dns"), "10.42.0.20");
  private static final Endpoint OTHER_SANDBOX_AGENT =
      Endpoint.pod("other-agent", "agent-run-other", AGENT.podLabels(), "10.42.0.21");
  private static final Endpoint OTHER_SANDBOX_PROXY =
      Endpoint.pod(
          "other-proxy", "agent-run-other", BundleFactory.proxyPodSelector("other"), "10.42.0.22");
  private static final Endpoint GATEWAY =
      Endpoint.pod("gateway", "platform", Map.of("app", "platform-gateway"), "10.42.0.40");
  private static final Endpoint GATEWAY_LOOKALIKE =
      Endpoint.pod("lookalike", "billing", Map.of("app", "platform-gateway"), "10.42.0.41");
  private static final Endpoint PLATFORM_DATABASE =
      Endpoint.pod("database", "platform", Map.of("app", "postgres"), "10.42.0.42");
  private static final Endpoint CONTROL_PLANE =
      Endpoint.pod("control-plane", "agent-sandbox", Map.of("app", "agent-sandbox"), "10.42.0.30");

  static Stream<Arguments> probes() {
    return Stream.of(
        row("agent reaches the proxy's port", AGENT, PROXY, 3128, "TCP", true),
        row("agent cannot reach another port of the proxy", AGENT, PROXY, 8080, "TCP", false),
        row("agent cannot use UDP to the proxy's port", AGENT, PROXY, 3128, "UDP", false),
        row("agent has no DNS over UDP", AGENT, DNS, 53, "UDP", false),
        row("agent has no DNS over TCP", AGENT, DNS, 53, "TCP", false),
        row(
            "agent cannot reach the metadata service",
            AGENT,
            ip("169.254.169.254"),
            80,
            "TCP",
            false),
        row(
            "agent cannot reach a public address directly",
            AGENT,
            ip("93.184.216.34"),
            443,
            "TCP",
            false),
        row(
            "agent cannot reach a public IPv6 address",
            AGENT,
            ip("2606:4700::1"),
            443,
            "TCP",
            false),
        row("agent cannot reach the node", AGENT, ip("192.168.1.10"), 10250, "TCP", false),
        row("agent cannot reach the API server", AGENT, ip("10.43.0.1"), 443, "TCP", false),
        row(
            "agent cannot reach an operator's internal range",
            AGENT,
            ip("10.20.0.7"),
            443,
            "TCP",
            false),
        row(
            "agent cannot reach a public address on the proxy's port",
            AGENT,
            ip("93.184.216.34"),
            3128,
            "TCP",
            false),
        row(
            "agent cannot reach another sandbox's proxy",
            AGENT,
            OTHER_SANDBOX_PROXY,
            3128,
            "TCP",
            false),
        row("agent cannot reach another sandbox", AGENT, OTHER_SANDBOX_AGENT, 8080, "TCP", false),
        row("agent cannot reach the control plane", AGENT, CONTROL_PLANE, 8080, "TCP", false),
        row("proxy resolves names over UDP", PROXY, DNS, 53, "UDP", true),
        row("proxy resolves names over TCP", PROXY, DNS, 53, "TCP", true),
        row("proxy cannot reach other kube-system pods", PROXY, METRICS, 443, "TCP", false),
        row(
            "proxy cannot reach a look-alike DNS pod elsewhere",
            PROXY,
            DNS_LOOKALIKE,
            53,
            "UDP",
            false),
        row("proxy cannot reach DNS pods on other ports", PROXY, DNS, 9153, "TCP", false),
        row("proxy reaches a public address on 443", PROXY, ip("93.184.216.34"), 443, "TCP", true),
        row(
            "proxy reaches a public IPv6 address on a dual-stack cluster",
            PROXY,
            ip("2606:4700::1"),
            443,
            "TCP",
            true),
        row("proxy reaches a declared internal range", PROXY, ip("10.20.0.7"), 443, "TCP", true),
        row(
            "proxy cannot reach a declared range on a port it does not list",
            PROXY,
            ip("10.20.0.7"),
            22,
            "TCP",
            false),
        row(
            "overlapping ranges: the /24's port inside the /24",
            PROXY,
            ip("10.20.9.7"),
            22,
            "TCP",
            true),
        row(
            "overlapping ranges: the /24's port does not spill over the /16",
            PROXY,
            ip("10.20.10.7"),
            22,
            "TCP",
            false),
        row("proxy reaches the gateway's pods on their port", PROXY, GATEWAY, 8080, "TCP", true),
        row("proxy cannot reach the gateway's pods on another", PROXY, GATEWAY, 22, "TCP", false),
        row("proxy cannot reach the gateway's pods over UDP", PROXY, GATEWAY, 8080, "UDP", false),
        row(
            "proxy cannot reach a pod with the gateway's labels in another namespace",
            PROXY,
            GATEWAY_LOOKALIKE,
            8080,
            "TCP",
            false),
        row(
            "proxy cannot reach another pod in the gateway's namespace",
            PROXY,
            PLATFORM_DATABASE,
            8080,
            "TCP",
            false),
        row("the agent cannot reach the gateway itself", AGENT, GATEWAY, 8080, "TCP", false),
        row(
            "proxy cannot reach 10/8 outside the declared range",
            PROXY,
            ip("10.21.0.1"),
            443,
            "TCP",
            false),
        row("proxy cannot reach 172.16/12", PROXY, ip("172.16.5.5"), 443, "TCP", false),
        row(
            "proxy cannot reach 192.168/16 (the node)",
            PROXY,
            ip("192.168.1.10"),
            10250,
            "TCP",
            false),
        row(
            "proxy cannot reach the metadata service",
            PROXY,
            ip("169.254.169.254"),
            80,
            "TCP",
            false),
        row("proxy cannot reach CGNAT 100.64/10", PROXY, ip("100.64.0.1"), 443, "TCP", false),
        row(
            "proxy cannot reach Azure's WireServer, in public space",
            PROXY,
            ip("168.63.129.16"),
            80,
            "TCP",
            false),
        row("proxy reaches the address next to it", PROXY, ip("168.63.129.17"), 443, "TCP", true),
        row("proxy cannot reach TEST-NET-3", PROXY, ip("203.0.113.7"), 443, "TCP", false),
        row("proxy reaches public IPv6", PROXY, ip("2606:4700::1111"), 443, "TCP", true),
        row(
            "proxy cannot reach 6to4 of a private address",
            PROXY,
            ip("2002:a00::1"),
            80,
            "TCP",
            false),
        row(
            "proxy cannot reach IPv6 outside global unicast",
            PROXY,
            ip("4000::1"),
            80,
            "TCP",
            false),
        row(
            "proxy cannot reach NAT64 of a private address",
            PROXY,
            ip("64:ff9b::a00:1"),
            80,
            "TCP",
            false),
        row("proxy cannot reach loopback", PROXY, ip("127.0.0.1"), 8080, "TCP", false),
        row("proxy cannot reach AWS's IPv6 metadata", PROXY, ip("fd00:ec2::254"), 80, "TCP", false),
        row("proxy cannot reach IPv6 link-local", PROXY, ip("fe80::1"), 80, "TCP", false),
        row("proxy cannot reach IPv6 loopback", PROXY, ip("::1"), 80, "TCP", false),
        row("proxy cannot reach the agent", PROXY, AGENT, 8080, "TCP", false),
        row("proxy cannot reach the control plane", PROXY, CONTROL_PLANE, 8080, "TCP", false),
        row("nothing reaches the agent from its proxy", PROXY, AGENT, 22, "TCP", false),
        row(
            "nothing reaches the agent from the control plane",
            CONTROL_PLANE,
            AGENT,
            8080,
            "TCP",
            false),
        row(
            "nothing reaches the agent from another sandbox",
            OTHER_SANDBOX_AGENT,
            AGENT,
            8080,
            "TCP",
            false),
        row(
            "another sandbox's agent cannot use this proxy",
            OTHER_SANDBOX_AGENT,
            PROXY,
            3128,
            "TCP",
            false),
        row("the control plane cannot use the proxy", CONTROL_PLANE, PROXY, 3128, "TCP", false));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("probes")
  void fence(String name, Endpoint from, Endpoint to, int port, String protocol, boolean expected) {
    PolicyReachability reachability = new PolicyReachability(policies(BUNDLE));
    assertThat(reachability.canReach(from, to, port, protocol)).as(name).isEqualTo(expected);
  }

  /**
   * Two runs of agents with different internal destinations: each proxy reaches its own agent's and
   * not the other's, so a destination never leaks from one agent's scope to another's.
   */
  @Test
  void eachRunsProxyReachesOnlyItsOwnAgentsDestinations() {
    KubernetesBundle other =
        new BundleFactory(Specs.config())
            .build(
                Specs.spec("r43", List.of(Specs.range("build-cache", "10.30.0.0/24", 6379)), false),
                Optional.of("gvisor"),
                Optional.of("10.43.7.10"));
    List<NetworkPolicy> both =
        Stream.concat(policies(BUNDLE).stream(), policies(other).stream()).toList();
    PolicyReachability reachability = new PolicyReachability(both);
    Endpoint otherProxy =
        Endpoint.pod(
            "proxy-r43",
            "agent-run-r43",
            other
                .get(io.fabric8.kubernetes.api.model.Pod.class, BundleFactory.PROXY)
                .getMetadata()
                .getLabels(),
            "10.42.0.50");
    assertThat(reachability.canReach(otherProxy, ip("10.30.0.5"), 6379, "TCP")).isTrue();
    assertThat(reachability.canReach(PROXY, ip("10.30.0.5"), 6379, "TCP")).isFalse();
    assertThat(reachability.canReach(otherProxy, GATEWAY, 8080, "TCP")).isFalse();
    assertThat(reachability.canReach(otherProxy, ip("10.20.0.7"), 443, "TCP")).isFalse();
    assertThat(reachability.canReach(PROXY, GATEWAY, 8080, "TCP")).isTrue();
  }

  @Test
  void singleStackPolicyHasNoIpv6Block() {
    KubernetesBundle single =
        new BundleFactory(Specs.config())
            .build(Specs.spec("r42"), Optional.empty(), Optional.empty());
    PolicyReachability reachability = new PolicyReachability(policies(single));
    assertThat(reachability.canReach(PROXY, ip("2606:4700::1"), 443, "TCP")).isFalse();
    assertThat(reachability.canReach(PROXY, ip("93.184.216.34"), 443, "TCP")).isTrue();
    assertThat(reachability.canReach(PROXY, ip("10.20.0.7"), 443, "TCP")).isFalse();
  }

  @Test
  void theProxyCannotReachNodesOrTheApiServerEvenAtPublicOrInternalAddresses() {
    KubernetesBundle fenced =
        new BundleFactory(
                Specs.config().toBuilder().dualStack(true).build().toBuilder()
                    .nodeCidrs(List.of("45.67.89.0/24", "10.20.5.0/24", "2a05:d018:7::/48"))
                    .apiServerCidrs(List.of("45.67.90.10/32"))
                    .build())
            .build(
                Specs.spec("r42", INTERNAL, false),
                Optional.of("gvisor"),
                Optional.of("10.43.7.9"));
    PolicyReachability reachability = new PolicyReachability(policies(fenced));
    assertThat(reachability.canReach(PROXY, ip("45.67.89.7"), 10250, "TCP"))
        .as("a node's public address, kubelet port")
        .isFalse();
    assertThat(reachability.canReach(PROXY, ip("45.67.90.10"), 6443, "TCP"))
        .as("the API server's public address")
        .isFalse();
    assertThat(reachability.canReach(PROXY, ip("2a05:d018:7::5"), 10250, "TCP"))
        .as("a node's IPv6 address")
        .isFalse();
    assertThat(reachability.canReach(PROXY, ip("10.20.5.9"), 10250, "TCP"))
        .as("a node inside a declared internal range")
        .isFalse();
    assertThat(reachability.canReach(PROXY, ip("10.20.0.7"), 443, "TCP"))
        .as("the rest of the internal range")
        .isTrue();
    assertThat(reachability.canReach(PROXY, ip("93.184.216.34"), 443, "TCP"))
        .as("the public internet")
        .isTrue();
    // Without the configuration, the same public node address is open: the test can fail.
    assertThat(
            new PolicyReachability(policies(BUNDLE))
                .canReach(PROXY, ip("45.67.89.7"), 10250, "TCP"))
        .isTrue();
  }

  static Stream<Arguments> edits() {
    return Stream.of(
        edit(
            "a DNS rule added to the agent's egress",
            NetworkFence.AGENT_EGRESS,
            p ->
                new NetworkPolicyBuilder(p)
                    .editSpec()
                    .addToEgress(
                        new NetworkPolicyEgressRuleBuilder()
                            .addNewTo()
                            .withNewNamespaceSelector()
                            .addToMatchLabels("kubernetes.io/metadata.name", "kube-system")
                            .endNamespaceSelector()
                            .endTo()
                            .addNewPort()
                            .withProtocol("UDP")
                            .withNewPort(53)
                            .endPort()
                            .build())
                    .endSpec()
                    .build()),
        edit(
            "the agent's rule widened to any destination",
            NetworkFence.AGENT_EGRESS,
            p ->
                new NetworkPolicyBuilder(p)
                    .editSpec()
                    .editFirstEgress()
                    .withTo(List.of())
                    .endEgress()
                    .endSpec()
                    .build()),
        edit(
            "the proxy's exceptions dropped",
            NetworkFence.PROXY_FENCE,
            p -> {
              NetworkPolicy copy = new NetworkPolicyBuilder(p).build();
              copy.getSpec().getEgress().get(1).getTo().get(0).getIpBlock().setExcept(List.of());
              return copy;
            }),
        edit(
            "the default deny narrowed to the proxy only",
            NetworkFence.DEFAULT_DENY,
            p ->
                new NetworkPolicyBuilder(p)
                    .editSpec()
                    .withPodSelector(new LabelSelector(null, BundleFactory.proxyPodSelector("r42")))
                    .endSpec()
                    .build()));
  }

  /** Proves the probes above can fail: each edit reopens something the table says is shut. */
  @ParameterizedTest(name = "the probes catch {0}")
  @MethodSource("edits")
  void probesCatchAPolicyEditThatReopensEgress(
      String name, String policy, UnaryOperator<NetworkPolicy> change) {
    List<NetworkPolicy> edited =
        policies(BUNDLE).stream()
            .map(p -> p.getMetadata().getName().equals(policy) ? change.apply(p) : p)
            .toList();
    PolicyReachability reachability = new PolicyReachability(edited);
    long broken =
        probes()
            .map(Arguments::get)
            .filter(
                a ->
                    reachability.canReach(
                            (Endpoint) a[1], (Endpoint) a[2], (int) a[3], (String) a[4])
                        != (boolean) a[5])
            .count();
    assertThat(broken).as(name).isPositive();
  }

  private static List<NetworkPolicy> policies(KubernetesBundle bundle) {
    return bundle.objects().stream()
        .filter(NetworkPolicy.class::isInstance)
        .map(NetworkPolicy.class::cast)
        .toList();
  }

  private static Endpoint ip(String address) {
    return Endpoint.address(address);
  }

  private static Arguments row(
      String name, Endpoint from, Endpoint to, int port, String protocol, boolean expected) {
    return Arguments.of(name, from, to, port, protocol, expected);
  }

  private static Arguments edit(String name, String policy, UnaryOperator<NetworkPolicy> change) {
    return Arguments.of(name, policy, change);
  }
}
