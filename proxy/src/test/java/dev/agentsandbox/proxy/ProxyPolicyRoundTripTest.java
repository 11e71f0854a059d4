package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.InternalDestination;
import dev.agentsandbox.policy.config.ProxyPolicy;
import dev.agentsandbox.policy.config.RunEgress;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The document a backend writes is the document the proxy reads: built for a run, written as JSON
 * the way the backends write it, read back by the proxy, equal field for field.
 */
class ProxyPolicyRoundTripTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path temp;

  private final RunEgress egress =
      new RunEgress(
          AllowList.parse(List.of("api.vendor.com", "*.cdn.example:8443")),
          Optional.of(AllowList.parse(List.of("api.vendor.com", "*.cdn.example"))),
          List.of(
              InternalDestination.range(
                  "mirror",
                  dev.agentsandbox.policy.net.Cidr.parse("10.20.0.0/16"),
                  new java.util.TreeSet<>(List.of(443))),
              InternalDestination.service(
                  "gateway",
                  new InternalDestination.ClusterService(
                      "platform",
                      new java.util.TreeMap<>(Map.of("app", "gateway")),
                      "gateway.platform.svc.cluster.local",
                      new java.util.TreeSet<>()),
                  new java.util.TreeSet<>(List.of(4000)))),
          Map.of("api.vendor.com", List.of("10.20.1.2")));

  @Test
  void aRunsDocumentReadsBackEqual() throws Exception {
    ProxyPolicy built = ProxyPolicy.forRun(egress, "run42", 3128);
    String written = JSON.writeValueAsString(built.toTree());

    assertThat(ProxyPolicy.read(JSON.readValue(written, Object.class))).isEqualTo(built);
  }

  @Test
  void aRunWithoutAHostsTableGetsAProxyThatAsksDns() throws Exception {
    // serve without --proxy-host gives every run an empty table: it must mean DNS, not a table
    // that resolves nothing (which refused every allowed name on every backend).
    RunEgress withoutHosts =
        new RunEgress(egress.allow(), egress.instanceAllow(), egress.internal(), Map.of());
    ProxyPolicy built = ProxyPolicy.forRun(withoutHosts, "run42", 3128);
    assertThat(built.toTree()).doesNotContainKey("hosts");
    Path file = temp.resolve("policy.json");
    Files.writeString(file, JSON.writeValueAsString(built.toTree()));

    assertThat(ProxyConfigs.fromPolicyFile(file).hosts()).isEmpty();
  }

  @Test
  void theProxyConfiguresItselfFromTheWrittenFile() throws Exception {
    ProxyPolicy built = ProxyPolicy.forRun(egress, "run42", 3128);
    Path file = temp.resolve("policy.json");
    Files.writeString(file, JSON.writeValueAsString(built.toTree()));

    ProxyConfig config = ProxyConfigs.fromPolicyFile(file);

    assertThat(config.listenHost()).isEqualTo("0.0.0.0");
    assertThat(config.listenPort()).isEqualTo(3128);
    assertThat(config.allow()).isEqualTo(egress.allow());
    assertThat(config.instanceAllow()).isEqualTo(egress.instanceAllow());
    assertThat(config.internal().asStrings())
        .containsExactly("10.20.0.0/16:443", "gateway.platform.svc.cluster.local:4000");
    assertThat(config.hosts().orElseThrow())
        .containsExactly(Map.entry("api.vendor.com", List.of(InetAddress.getByName("10.20.1.2"))));
    assertThat(config.runId()).isEqualTo("run42");
    assertThat(config.decisions()).contains("-");
    assertThat(config.dnsServer()).isEmpty();
    assertThat(config.metrics()).isEmpty();
    assertThat(config.limits()).isEqualTo(Limits.DEFAULTS);
  }

  @Test
  void aDuplicatedKeyIsRefusedNotResolvedSilently() throws Exception {
    Path file = temp.resolve("twice.json");
    Files.writeString(
        file, "{\"listen\": \"127.0.0.1:0\", \"allow\": [], \"allow\": [\"evil.example\"]}");

    assertThatThrownBy(() -> ProxyConfigs.fromPolicyFile(file))
        .isInstanceOf(InvalidProxyConfigException.class)
        .hasMessageContaining("reading policy file")
        .hasMessageContaining("Duplicate field 'allow'");
  }
}
