package dev.agentsandbox.policy.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.net.Cidr;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class ProxyPolicyTest {
  private static final RunEgress EGRESS =
      new RunEgress(
          AllowList.parse(List.of("api.vendor.com", "*.cdn.example:8443")),
          Optional.of(AllowList.parse(List.of("api.vendor.com"))),
          List.of(
              InternalDestination.range(
                  "mirror", Cidr.parse("10.20.0.0/16"), new TreeSet<>(List.of(443, 8443))),
              InternalDestination.service(
                  "gateway",
                  new InternalDestination.ClusterService(
                      "platform",
                      new TreeMap<>(Map.of("app", "gateway")),
                      "gateway.platform.svc.cluster.local",
                      new TreeSet<>(List.of(8080))),
                  new TreeSet<>(List.of(4000)))),
          Map.of("api.vendor.com", List.of("10.20.1.2")));

  @Test
  void aRunsDocumentHasTheWireShapeBothBackendsWrote() {
    Map<String, Object> tree = ProxyPolicy.forRun(EGRESS, "run42", 3128).toTree();

    assertThat(tree.keySet())
        .containsExactly(
            "listen", "allow", "instance_allow", "internal", "hosts", "run_id", "decisions");
    assertThat(tree)
        .containsEntry("listen", "0.0.0.0:3128")
        .containsEntry("allow", List.of("api.vendor.com", "*.cdn.example:8443"))
        .containsEntry("instance_allow", List.of("api.vendor.com"))
        .containsEntry(
            "internal",
            List.of(
                Map.of("cidr", "10.20.0.0/16", "ports", List.of(443, 8443)),
                // The proxy dials the Service's port; the pods' own port is the fence's business.
                Map.of("host", "gateway.platform.svc.cluster.local", "ports", List.of(4000))))
        .containsEntry("hosts", Map.of("api.vendor.com", List.of("10.20.1.2")))
        .containsEntry("run_id", "run42")
        .containsEntry("decisions", "-");
  }

  @Test
  void anUnrestrictedInstancePolicyIsWrittenAsNull() {
    RunEgress open =
        new RunEgress(EGRESS.allow(), Optional.empty(), EGRESS.internal(), EGRESS.hosts());

    Map<String, Object> tree = ProxyPolicy.forRun(open, "run42", 3128).toTree();

    assertThat(tree).containsEntry("instance_allow", null);
    assertThat(ProxyPolicy.read(tree).instanceAllow()).isEmpty();
  }

  @Test
  void everyFieldSurvivesTreeAndBack() {
    ProxyPolicy full =
        new ProxyPolicy(
            "127.0.0.1:0",
            EGRESS.allow(),
            EGRESS.instanceAllow(),
            EGRESS.internal().stream().map(InternalDestination::rule).toList(),
            Optional.of(EGRESS.hosts()),
            Optional.of("127.0.0.1:5353"),
            Optional.of("run42"),
            Optional.of("/tmp/decisions.jsonl"),
            Optional.of("127.0.0.1:9100"),
            new ProxyPolicy.Limits(
                OptionalInt.of(1000),
                OptionalInt.of(2000),
                OptionalInt.of(3000),
                OptionalInt.of(4000),
                OptionalInt.of(5),
                OptionalInt.of(4096),
                OptionalInt.of(1)));

    assertThat(ProxyPolicy.read(full.toTree())).isEqualTo(full);
    assertThat(ProxyPolicy.read(ProxyPolicy.forRun(EGRESS, "run42", 3128).toTree()))
        .isEqualTo(ProxyPolicy.forRun(EGRESS, "run42", 3128));
  }

  @Test
  void nullMeansAbsent() {
    Map<String, Object> tree = new LinkedHashMap<>();
    tree.put("listen", "127.0.0.1:0");
    tree.put("allow", List.of());
    tree.put("hosts", null);
    tree.put("limits", null);

    ProxyPolicy read = ProxyPolicy.read(tree);

    assertThat(read.hosts()).isEmpty();
    assertThat(read.limits()).isEqualTo(ProxyPolicy.Limits.DEFAULTS);
    assertThat(read.runId()).isEmpty();
  }

  static Stream<Arguments> refused() {
    return Stream.of(
        row(
            "misspelt field",
            Map.of("listen", "a:1", "allow", List.of(), "alow", List.of()),
            "alow: unknown field 'alow'"),
        row("no listen", Map.of("allow", List.of()), "listen: is required"),
        row("no allow", Map.of("listen", "a:1"), "allow: is required"),
        row(
            "allow not a list",
            Map.of("listen", "a:1", "allow", "a.test"),
            "allow: must be a list"),
        row("bad allow entry", Map.of("listen", "a:1", "allow", List.of("a..test")), "allow[0]: "),
        row(
            "internal range wider than /16",
            Map.of("listen", "a:1", "allow", List.of(), "internal", List.of(range("10.0.0.0/15"))),
            "internal[0]: internal CIDR 10.0.0.0/15: is wider than /16"),
        row(
            "internal range on the metadata address",
            Map.of(
                "listen", "a:1", "allow", List.of(), "internal", List.of(range("169.254.169.254"))),
            "internal[0]: internal CIDR 169.254.169.254/32: covers the metadata address"),
        row(
            "internal range without ports",
            Map.of(
                "listen",
                "a:1",
                "allow",
                List.of(),
                "internal",
                List.of(Map.of("cidr", "10.20.1.0/24"))),
            "internal[0].ports: missing"),
        row(
            "internal port 65536",
            Map.of(
                "listen",
                "a:1",
                "allow",
                List.of(),
                "internal",
                List.of(Map.of("cidr", "10.20.1.0/24", "ports", List.of(65536)))),
            "internal[0].ports[0]: must be from 1 to 65535"),
        row(
            "internal with both a cidr and a host",
            Map.of(
                "listen",
                "a:1",
                "allow",
                List.of(),
                "internal",
                List.of(Map.of("cidr", "10.20.1.0/24", "host", "a.test", "ports", List.of(1)))),
            "internal[0]: names a cidr or a host"),
        row(
            "the old instance-wide field",
            Map.of("listen", "a:1", "allow", List.of(), "internal_cidrs", List.of("10.20.1.0/24")),
            "internal_cidrs: unknown field"),
        row(
            "hosts entry not a list",
            Map.of("listen", "a:1", "allow", List.of(), "hosts", Map.of("a.test", "10.0.0.1")),
            "must be a list of strings"),
        row(
            "zero connections",
            Map.of("listen", "a:1", "allow", List.of(), "limits", Map.of("max_connections", 0)),
            "limits.max_connections: must be from 1"),
        row(
            "fractional timeout",
            Map.of("listen", "a:1", "allow", List.of(), "limits", Map.of("idle_timeout_ms", 1.5)),
            "limits.idle_timeout_ms: must be a whole number"),
        row(
            "misspelt limit",
            Map.of("listen", "a:1", "allow", List.of(), "limits", Map.of("max_conections", 5)),
            "limits.max_conections: unknown field"),
        row("not an object", List.of(), "must be an object"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource
  void refused(String name, Object tree, String message) {
    assertThatThrownBy(() -> ProxyPolicy.read(tree))
        .isInstanceOf(InvalidConfigException.class)
        .hasMessageContaining(message);
  }

  private static Map<String, Object> range(String cidr) {
    return Map.of("cidr", cidr, "ports", List.of(80));
  }

  private static Arguments row(String name, Object tree, String message) {
    return Arguments.of(name, tree, message);
  }
}
