package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.backend.k8s.PolicyReachability.Endpoint;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.batch.v1.Job;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyBuilder;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPeerBuilder;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Who can reach a session's relay, computed from the policies the backend generates for two
 * sessions together with the control plane's own policies in {@code deploy/} (whose egress must
 * allow the connection too): the control plane's pods reach the relay's port of every session, and
 * nothing else reaches it, not the run's own proxy, another run's pods, a look-alike in another
 * namespace, another pod of the control plane's namespace, or an address outside the pods; and the
 * agent's own reach is unchanged. Nothing here sends a packet.
 */
class SessionReachabilityTest {
  private static final KubernetesBackendConfig CONFIG = Specs.config();
  private static final int RELAY = CONFIG.sessions().port();
  private static final int RUNNER = CONFIG.sessions().runnerPort();
  private static final KubernetesSerialization K8S = new KubernetesSerialization();

  private static final KubernetesBundle SESSION = session("r42");
  private static final KubernetesBundle OTHER = session("r43");

  private static KubernetesBundle session(String runId) {
    return new BundleFactory(CONFIG)
        .build(
            Specs.spec(runId),
            Optional.of("gvisor"),
            Optional.of("10.43.7.9"),
            Optional.of(
                SessionWiring.of(new dev.agentsandbox.relay.CertificatePin("ab".repeat(32)))));
  }

  /** A pod of a bundle, with its namespace's labels as the API server sets them. */
  private static Endpoint pod(
      KubernetesBundle bundle, String name, Map<String, String> labels, String ip) {
    Map<String, String> namespaceLabels =
        new TreeMap<>(bundle.get(Namespace.class, bundle.namespace()).getMetadata().getLabels());
    namespaceLabels.put("kubernetes.io/metadata.name", bundle.namespace());
    return new Endpoint(
        name, Optional.of(bundle.namespace()), namespaceLabels, labels, ip, Map.of());
  }

  private static Map<String, String> agentLabels(KubernetesBundle bundle) {
    return bundle
        .get(Job.class, BundleFactory.JOB)
        .getSpec()
        .getTemplate()
        .getMetadata()
        .getLabels();
  }

  private static final Endpoint AGENT = pod(SESSION, "agent", agentLabels(SESSION), "10.42.0.11");
  private static final Endpoint PROXY =
      pod(
          SESSION,
          "proxy",
          SESSION.get(Pod.class, BundleFactory.PROXY).getMetadata().getLabels(),
          "10.42.0.12");
  private static final Endpoint OTHER_AGENT =
      pod(OTHER, "other-agent", agentLabels(OTHER), "10.42.0.21");
  private static final Endpoint OTHER_PROXY =
      pod(
          OTHER,
          "other-proxy",
          OTHER.get(Pod.class, BundleFactory.PROXY).getMetadata().getLabels(),
          "10.42.0.22");
  private static final Endpoint CONTROL_PLANE =
      Endpoint.pod(
          "control-plane",
          "agent-sandbox",
          SessionSettings.DEFAULT.controlPlanePodLabels(),
          "10.42.0.30");
  private static final Endpoint CONTROL_PLANE_NEIGHBOUR =
      Endpoint.pod("debug", "agent-sandbox", Map.of("app", "debug"), "10.42.0.31");
  private static final Endpoint LOOKALIKE =
      Endpoint.pod(
          "lookalike", "billing", SessionSettings.DEFAULT.controlPlanePodLabels(), "10.42.0.32");
  private static final Endpoint KUBE_SYSTEM =
      Endpoint.pod("coredns", "kube-system", Map.of("k8s-app", "kube-dns"), "10.42.0.3");

  static Stream<Arguments> probes() {
    return Stream.of(
        row("the control plane reaches the session's relay", CONTROL_PLANE, AGENT, RELAY, true),
        row(
            "the control plane reaches another session's relay",
            CONTROL_PLANE,
            OTHER_AGENT,
            RELAY,
            true),
        row(
            "the control plane cannot reach the runner's loopback port",
            CONTROL_PLANE,
            AGENT,
            RUNNER,
            false),
        row(
            "the control plane cannot reach the agent's other ports",
            CONTROL_PLANE,
            AGENT,
            8080,
            false),
        row(
            "the control plane cannot reach the proxy on the relay's port",
            CONTROL_PLANE,
            PROXY,
            RELAY,
            false),
        row("the run's own proxy cannot reach the relay", PROXY, AGENT, RELAY, false),
        row("another run's agent cannot reach the relay", OTHER_AGENT, AGENT, RELAY, false),
        row("another run's proxy cannot reach the relay", OTHER_PROXY, AGENT, RELAY, false),
        row(
            "another pod of the control plane's namespace cannot reach the relay",
            CONTROL_PLANE_NEIGHBOUR,
            AGENT,
            RELAY,
            false),
        row(
            "a pod with the control plane's labels elsewhere cannot reach the relay",
            LOOKALIKE,
            AGENT,
            RELAY,
            false),
        row(
            "an address outside the pods cannot reach the relay",
            ip("192.168.1.10"),
            AGENT,
            RELAY,
            false),
        row("a public address cannot reach the relay", ip("93.184.216.34"), AGENT, RELAY, false),
        row("the agent cannot reach the control plane", AGENT, CONTROL_PLANE, 8080, false),
        row(
            "the agent cannot reach the control plane on the relay's port",
            AGENT,
            CONTROL_PLANE,
            RELAY,
            false),
        row("the agent cannot reach another session's relay", AGENT, OTHER_AGENT, RELAY, false),
        row("the agent still reaches its proxy", AGENT, PROXY, CONFIG.proxyPort(), true),
        row("the agent still reaches nothing public", AGENT, ip("93.184.216.34"), 443, false),
        row("the agent still has no DNS", AGENT, KUBE_SYSTEM, 53, false));
  }

  /** Rows that only the control plane's own egress policy makes true. */
  static Stream<Arguments> controlPlaneEgress() {
    return Stream.of(
        row(
            "the control plane's egress opens the relay's port of agents only",
            CONTROL_PLANE,
            KUBE_SYSTEM,
            RELAY,
            false),
        row(
            "the control plane's egress opens no other port of an agent",
            CONTROL_PLANE,
            AGENT,
            8443,
            false));
  }

  /** The sessions' policies alone: what a sandbox admits, whatever the sender's side allows. */
  private static List<NetworkPolicy> sandboxes(KubernetesBundle... bundles) {
    return Stream.of(bundles)
        .flatMap(b -> b.objects().stream())
        .filter(NetworkPolicy.class::isInstance)
        .map(NetworkPolicy.class::cast)
        .toList();
  }

  /** The sessions' policies with the control plane namespace's, as a cluster has them. */
  private static List<NetworkPolicy> policies(KubernetesBundle... bundles) {
    return Stream.concat(sandboxes(bundles).stream(), controlPlanePolicies().stream()).toList();
  }

  /** The control plane namespace's own policies, as deploy/ ships them. */
  static List<NetworkPolicy> controlPlanePolicies() {
    return RbacContractTest.deployDocuments().stream()
        .filter(d -> "NetworkPolicy".equals(d.get("kind")))
        .map(d -> K8S.convertValue(d, NetworkPolicy.class))
        .filter(p -> "agent-sandbox".equals(p.getMetadata().getNamespace()))
        .toList();
  }

  /** Each row holds by the sandboxes' policies alone, and with the control plane's beside them. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("probes")
  void relay(String name, Endpoint from, Endpoint to, int port, boolean expected) {
    assertThat(new PolicyReachability(sandboxes(SESSION, OTHER)).canReach(from, to, port, "TCP"))
        .as(name + ", by the sandboxes' policies alone")
        .isEqualTo(expected);
    assertThat(new PolicyReachability(policies(SESSION, OTHER)).canReach(from, to, port, "TCP"))
        .as(name + ", with the control plane's policies")
        .isEqualTo(expected);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("controlPlaneEgress")
  void controlPlane(String name, Endpoint from, Endpoint to, int port, boolean expected) {
    assertThat(new PolicyReachability(policies(SESSION, OTHER)).canReach(from, to, port, "TCP"))
        .as(name)
        .isEqualTo(expected);
  }

  @Test
  void aRunWithoutASessionHasNoWayIn() {
    KubernetesBundle run =
        new BundleFactory(CONFIG)
            .build(Specs.spec("r44"), Optional.of("gvisor"), Optional.of("10.43.7.9"));
    Endpoint agent = pod(run, "agent", agentLabels(run), "10.42.0.51");
    assertThat(new PolicyReachability(policies(run)).canReach(CONTROL_PLANE, agent, RELAY, "TCP"))
        .isFalse();
  }

  @Test
  void theControlPlanesOwnEgressIsNeeded() {
    // Without deploy/'s egress rule the control plane's default deny holds the connection.
    List<NetworkPolicy> withoutIt =
        policies(SESSION).stream()
            .map(
                p ->
                    p.getMetadata().getName().equals("control-plane")
                        ? new NetworkPolicyBuilder(p)
                            .editSpec()
                            .withEgress(p.getSpec().getEgress().subList(0, 3))
                            .endSpec()
                            .build()
                        : p)
            .toList();
    assertThat(new PolicyReachability(withoutIt).canReach(CONTROL_PLANE, AGENT, RELAY, "TCP"))
        .isFalse();
  }

  static Stream<Arguments> edits() {
    return Stream.of(
        edit(
            "the peer split into a namespace peer and a pod peer",
            p ->
                new NetworkPolicyBuilder(p)
                    .editSpec()
                    .editFirstIngress()
                    .withFrom(
                        new NetworkPolicyPeerBuilder()
                            .withNamespaceSelector(
                                p.getSpec()
                                    .getIngress()
                                    .get(0)
                                    .getFrom()
                                    .get(0)
                                    .getNamespaceSelector())
                            .build(),
                        new NetworkPolicyPeerBuilder()
                            .withPodSelector(
                                p.getSpec().getIngress().get(0).getFrom().get(0).getPodSelector())
                            .withNamespaceSelector(
                                new io.fabric8.kubernetes.api.model.LabelSelector())
                            .build())
                    .endIngress()
                    .endSpec()
                    .build()),
        edit(
            "the pod selector dropped from the peer",
            p -> {
              NetworkPolicy copy = new NetworkPolicyBuilder(p).build();
              copy.getSpec().getIngress().get(0).getFrom().get(0).setPodSelector(null);
              return copy;
            }),
        edit(
            "the ports dropped",
            p -> {
              NetworkPolicy copy = new NetworkPolicyBuilder(p).build();
              copy.getSpec().getIngress().get(0).setPorts(List.of());
              return copy;
            }),
        edit(
            "the peers dropped (from anywhere)",
            p -> {
              NetworkPolicy copy = new NetworkPolicyBuilder(p).build();
              copy.getSpec().getIngress().get(0).setFrom(List.of());
              return copy;
            }));
  }

  /**
   * Proves the table can fail: each edit of the session's policy lets in something it shuts, by the
   * sandboxes' policies alone (the control plane's namespace is the operator's to change).
   */
  @ParameterizedTest(name = "the probes catch {0}")
  @MethodSource("edits")
  void probesCatchAnEditThatOpensTheRelay(String name, UnaryOperator<NetworkPolicy> change) {
    List<NetworkPolicy> edited =
        sandboxes(SESSION, OTHER).stream()
            .map(
                p ->
                    p.getMetadata().getName().equals(NetworkFence.SESSION_INGRESS)
                        ? change.apply(p)
                        : p)
            .toList();
    PolicyReachability reachability = new PolicyReachability(edited);
    long broken =
        probes()
            .map(Arguments::get)
            .filter(
                a ->
                    reachability.canReach((Endpoint) a[1], (Endpoint) a[2], (int) a[3], "TCP")
                        != (boolean) a[4])
            .count();
    assertThat(broken).as(name).isPositive();
  }

  private static Endpoint ip(String address) {
    return Endpoint.address(address);
  }

  private static Arguments row(
      String name, Endpoint from, Endpoint to, int port, boolean expected) {
    return Arguments.of(name, from, to, port, expected);
  }

  private static Arguments edit(String name, UnaryOperator<NetworkPolicy> change) {
    return Arguments.of(name, change);
  }
}
