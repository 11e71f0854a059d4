package dev.agentsandbox.policy.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.policy.AllowList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
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
          List.of("10.20.0.0/16"),
          Map.of("api.vendor.com", List.of("10.20.1.2")));

  @Test
  void aRunsDocumentHasTheWireShapeBothBackendsWrote() {
    Map<String, Object> tree = ProxyPolicy.forRun(EGRESS, "run42", 3128).toTree();

    assertThat(tree.keySet())
        .containsExactly(
            "listen", "allow", "instance_allow", "internal_cidrs", "hosts", "run_id", "decisions");
    assertThat(tree)
        .containsEntry("listen", "0.0.0.0:3128")
        .containsEntry("allow", List.of("api.vendor.com", "*.cdn.example:8443"))
        .containsEntry("instance_allow", List.of("api.vendor.com"))
        .containsEntry("internal_cidrs", List.of("10.20.0.0/16"))
        .containsEntry("hosts", Map.of("api.vendor.com", List.of("10.20.1.2")))
        .containsEntry("run_id", "run42")
        .containsEntry("decisions", "-");
  }

  @Test
  void anUnrestrictedInstancePolicyIsWrittenAsNull() {
    RunEgress open =
        new RunEgress(EGRESS.allow(), Optional.empty(), EGRESS.internalCidrs(), EGRESS.hosts());

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
            EGRESS.internalCidrs(),
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
            "internal range wider than /8",
            Map.of("listen", "a:1", "allow", List.of(), "internal_cidrs", List.of("10.0.0.0/7")),
            "internal_cidrs[0]: "),
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

  private static Arguments row(String name, Object tree, String message) {
    return Arguments.of(name, tree, message);
  }
}
