package dev.agentsandbox.policy.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.policy.config.Loosening.Kind;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Internal destinations per agent: what the configuration refuses at config time (each row tries to
 * get around one rule), and which changes are loosenings.
 */
class InternalDestinationsTest {
  private static Map<String, Object> cidr(String cidr, Object ports) {
    return Map.of("cidr", cidr, "ports", ports);
  }

  private static Map<String, Object> service(
      String namespace, Map<String, String> labels, Object ports) {
    Map<String, Object> service = new LinkedHashMap<>();
    service.put("namespace", namespace);
    service.put("pod_labels", labels);
    service.put("host", "platform-gateway.platform.svc.cluster.local");
    return Map.of("service", service, "ports", ports);
  }

  private static final Map<String, Object> GATEWAY =
      service("platform", Map.of("app", "platform-gateway"), List.of(4000));

  /** A one-agent document with these destinations and, optionally, an internal_widest. */
  private static Map<String, Object> doc(Map<String, Object> internal, Object widest) {
    Map<String, Object> agent = new LinkedHashMap<>();
    agent.put("allow", List.of("platform-gateway.platform.svc.cluster.local:4000"));
    agent.put("internal", internal);
    Map<String, Object> doc = new LinkedHashMap<>();
    doc.put("enabled", true);
    doc.put("backend", "k8s");
    if (widest != null) {
      doc.put("internal_widest", widest);
    }
    doc.put("agents", Map.of("helper", agent));
    return doc;
  }

  private static Map<String, Object> doc(Map<String, Object> internal) {
    return doc(internal, null);
  }

  @Test
  void theFinding_aGatewayAndAMirrorEachOnTheirOwnPorts() {
    SandboxConfig config =
        SandboxConfig.read(
            doc(
                Map.of(
                    "llm-gateway",
                    GATEWAY,
                    "git-mirror",
                    cidr("10.20.30.0/28", List.of(443, 22)))));

    AgentSettings agent = config.agents().get("helper");
    assertThat(agent.internal().keySet()).containsExactly("git-mirror", "llm-gateway");
    assertThat(agent.internal().get("git-mirror").rule()).hasToString("10.20.30.0/28:22,443");
    assertThat(agent.internal().get("llm-gateway").rule())
        .hasToString("platform-gateway.platform.svc.cluster.local:4000");
    assertThat(SandboxConfig.read(config.toTree())).isEqualTo(config);
  }

  static Stream<Arguments> refused() {
    return Stream.of(
        row(
            "the metadata address, as the finding's proxy accepted it",
            doc(Map.of("m", cidr("169.254.169.254/32", List.of(80)))),
            "agents.helper.internal.m: internal CIDR 169.254.169.254/32: covers the metadata"
                + " address 169.254.169.254"),
        row(
            "a private /16 that hides Alibaba's metadata in CGNAT",
            doc(Map.of("m", cidr("100.100.0.0/16", List.of(80))), Map.of("ipv4", 16)),
            "covers the metadata address 100.100.100.200"),
        row(
            "AWS's IPv6 metadata inside a ULA /64",
            doc(Map.of("m", cidr("fd00:ec2::/64", List.of(80)))),
            "covers the metadata address fd00:ec2::254"),
        row(
            "the metadata address as IPv4-mapped IPv6",
            doc(Map.of("m", cidr("::ffff:169.254.169.254/128", List.of(80)))),
            "embeds IPv4"),
        row(
            "a /8, which the instance-wide flag accepted",
            doc(Map.of("m", cidr("10.0.0.0/8", List.of(443)))),
            "is wider than /16"),
        row(
            "a /23 over the default /24 limit",
            doc(Map.of("m", cidr("10.20.0.0/23", List.of(443)))),
            "more than one /24"),
        row(
            "a /23 split into two /24s",
            doc(
                Map.of(
                    "a", cidr("10.20.0.0/24", List.of(443)),
                    "b", cidr("10.20.1.0/24", List.of(443)))),
            "agents.helper.internal: the internal ranges together cover 512 IPv4 addresses"),
        row(
            "a /7 split into two /8s with the limit at its widest",
            doc(
                Map.of(
                    "a", cidr("10.0.0.0/8", List.of(443)),
                    "b", cidr("11.0.0.0/8", List.of(443))),
                Map.of("ipv4", 16)),
            "is wider than /16"),
        row(
            "three /25s over a /24 limit, overlapping ones counted once",
            doc(
                Map.of(
                    "a", cidr("10.20.0.0/25", List.of(443)),
                    "b", cidr("10.20.0.0/25", List.of(22)),
                    "c", cidr("10.20.0.128/25", List.of(443)),
                    "d", cidr("10.20.1.0/25", List.of(443)))),
            "together cover 384 IPv4 addresses"),
        row(
            "an IPv6 /63 split into two /64s",
            doc(
                Map.of(
                    "a", cidr("fd12:3456:789a:0::/64", List.of(443)),
                    "b", cidr("fd12:3456:789a:1::/64", List.of(443)))),
            "IPv6 addresses, more than one /64"),
        row(
            "internal_widest below the proxy's floor",
            doc(Map.of(), Map.of("ipv4", 8)),
            "internal_widest.ipv4: must be from 16 to 32"),
        row(
            "port 0",
            doc(Map.of("m", cidr("10.20.1.0/24", List.of(0)))),
            "ports[0]: must be from 1"),
        row(
            "port 65536",
            doc(Map.of("m", cidr("10.20.1.0/24", List.of(65536)))),
            "ports[0]: must be from 1 to 65535"),
        row(
            "no ports: open on every port is gone",
            doc(Map.of("m", Map.of("cidr", "10.20.1.0/24"))),
            "agents.helper.internal.m.ports: missing"),
        row(
            "an empty port list",
            doc(Map.of("m", cidr("10.20.1.0/24", List.of()))),
            "must be a list of 1 to 16 ports"),
        row(
            "a port as a range string",
            doc(Map.of("m", cidr("10.20.1.0/24", List.of("1-65535")))),
            "ports[0]: "),
        row(
            "both a cidr and a service",
            doc(Map.of("m", Map.of("cidr", "10.20.1.0/24", "service", Map.of(), "ports", 1))),
            "names a cidr or a service"),
        row(
            "a service selecting every pod",
            doc(Map.of("g", service("platform", Map.of(), List.of(4000)))),
            "pod_labels: at least one label"),
        row(
            "a service in another sandbox's namespace",
            doc(Map.of("g", service("agent-run-abc", Map.of("app", "x"), List.of(4000)))),
            "agent-run-abc is never an internal destination"),
        row(
            "a service in kube-system",
            doc(Map.of("g", service("kube-system", Map.of("k8s-app", "x"), List.of(443)))),
            "kube-system is never an internal destination"),
        row(
            "a service selecting sandbox pods by the sandbox's own label",
            doc(
                Map.of(
                    "g",
                    service("platform", Map.of("agent-sandbox.dev/role", "proxy"), List.of(1)))),
            "pod_labels.agent-sandbox.dev/role: this key is the sandbox's own"),
        row(
            "a service host that is an IP literal",
            doc(
                Map.of(
                    "g",
                    Map.of(
                        "service",
                        Map.of(
                            "namespace",
                            "platform",
                            "pod_labels",
                            Map.of("app", "x"),
                            "host",
                            "10.43.0.10"),
                        "ports",
                        List.of(4000)))),
            "service.host: "),
        row(
            "a misspelt field",
            doc(Map.of("m", Map.of("cidr", "10.20.1.0/24", "port", List.of(443)))),
            "m.port: unknown field"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource
  void refused(String name, Map<String, Object> doc, String message) {
    assertThatThrownBy(() -> SandboxConfig.read(doc))
        .isInstanceOf(InvalidConfigException.class)
        .hasMessageContaining(message);
  }

  static Stream<Arguments> loosenings() {
    Map<String, Object> mirror = Map.of("mirror", cidr("10.20.30.0/28", List.of(443)));
    Map<String, Object> gateway = Map.of("gw", GATEWAY);
    return Stream.of(
        change("adding a destination", doc(Map.of()), doc(mirror), Kind.INTERNAL_DESTINATION_ADDED),
        change(
            "widening its range",
            doc(mirror),
            doc(Map.of("mirror", cidr("10.20.30.0/27", List.of(443)))),
            Kind.INTERNAL_DESTINATION_WIDENED),
        change(
            "moving its range elsewhere",
            doc(mirror),
            doc(Map.of("mirror", cidr("10.20.31.0/28", List.of(443)))),
            Kind.INTERNAL_DESTINATION_WIDENED),
        change(
            "adding a port",
            doc(mirror),
            doc(Map.of("mirror", cidr("10.20.30.0/28", List.of(443, 22)))),
            Kind.INTERNAL_PORT_ADDED),
        change(
            "renaming it is judged as adding it",
            doc(mirror),
            doc(Map.of("mirror2", cidr("10.20.30.0/28", List.of(443)))),
            Kind.INTERNAL_DESTINATION_ADDED),
        change(
            "dropping a pod label selects more pods",
            doc(
                Map.of(
                    "gw",
                    service(
                        "platform",
                        Map.of("app", "platform-gateway", "tier", "a"),
                        List.of(4000)))),
            doc(gateway),
            Kind.INTERNAL_DESTINATION_WIDENED),
        change(
            "another namespace",
            doc(gateway),
            doc(Map.of("gw", service("billing", Map.of("app", "platform-gateway"), List.of(4000)))),
            Kind.INTERNAL_DESTINATION_WIDENED),
        change(
            "a service turned into a range",
            doc(gateway),
            doc(Map.of("gw", cidr("10.20.30.0/28", List.of(4000)))),
            Kind.INTERNAL_DESTINATION_WIDENED),
        change(
            "raising internal_widest",
            doc(Map.of(), Map.of("ipv4", 24)),
            doc(Map.of(), Map.of("ipv4", 20)),
            Kind.INTERNAL_WIDEST_RAISED));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource
  void loosenings(String name, Map<String, Object> before, Map<String, Object> after, Kind kind) {
    assertThat(Loosenings.between(SandboxConfig.read(before), SandboxConfig.read(after)))
        .extracting(Loosening::kind)
        .containsExactly(kind);
  }

  static Stream<Arguments> notLoosenings() {
    Map<String, Object> mirror = Map.of("mirror", cidr("10.20.30.0/28", List.of(443, 22)));
    return Stream.of(
        change("removing a destination", doc(mirror), doc(Map.of()), null),
        change(
            "narrowing its range and dropping a port",
            doc(mirror),
            doc(Map.of("mirror", cidr("10.20.30.0/29", List.of(443)))),
            null),
        change(
            "adding a pod label selects fewer pods",
            doc(Map.of("gw", GATEWAY)),
            doc(
                Map.of(
                    "gw",
                    service(
                        "platform",
                        Map.of("app", "platform-gateway", "tier", "a"),
                        List.of(4000)))),
            null),
        change(
            "lowering internal_widest",
            doc(Map.of(), Map.of("ipv4", 20)),
            doc(Map.of(), Map.of("ipv4", 24)),
            null));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource
  void notLoosenings(String name, Map<String, Object> before, Map<String, Object> after, Kind k) {
    assertThat(Loosenings.between(SandboxConfig.read(before), SandboxConfig.read(after))).isEmpty();
  }

  private static Arguments row(String name, Map<String, Object> doc, String message) {
    return Arguments.of(name, doc, message);
  }

  private static Arguments change(
      String name, Map<String, Object> before, Map<String, Object> after, Kind kind) {
    return Arguments.of(name, before, after, kind);
  }
}
