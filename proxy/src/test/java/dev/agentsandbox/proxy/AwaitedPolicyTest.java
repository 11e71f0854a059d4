package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.ProxyPolicy;
import dev.agentsandbox.policy.config.RunEgress;
import dev.agentsandbox.policy.net.InternalRanges;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.io.SequenceInputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * What an {@code --await-policy} proxy accepts on its channel: the policy file's schema, with the
 * parts fixed at start left out or repeated unchanged, and nothing that contradicts them; and the
 * channel itself (one document at a time, capped).
 */
class AwaitedPolicyTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static ProxyConfig fixed(Limits limits) {
    return new ProxyConfig(
        "0.0.0.0",
        3128,
        AllowList.EMPTY,
        Optional.empty(),
        InternalRanges.NONE,
        Optional.empty(),
        Optional.empty(),
        Optional.of("-"),
        "",
        Optional.of(InetSocketAddress.createUnresolved("0.0.0.0", 9464)),
        limits);
  }

  private static Object tree(String json) throws Exception {
    return JSON.readValue(json, Object.class);
  }

  @Test
  void whatEveryBackendWritesForARunIsAcceptedUnchanged() throws Exception {
    RunEgress egress =
        new RunEgress(AllowList.parse(List.of("api.test")), Optional.empty(), List.of(), Map.of());
    Object written =
        JSON.convertValue(ProxyPolicy.forRun(egress, "run-7", 3128).toTree(), Object.class);
    ProxyConfig config = ProxyConfigs.fromAwaitedPolicy(written, fixed(Limits.DEFAULTS));
    assertThat(config.allow()).isEqualTo(AllowList.parse(List.of("api.test")));
    assertThat(config.runId()).isEqualTo("run-7");
    assertThat(config.listenPort()).isEqualTo(3128);
    assertThat(config.decisions()).hasValue("-");
    assertThat(config.limits()).isEqualTo(Limits.DEFAULTS);
  }

  @Test
  void fixedPartsLeftOutKeepTheStartValues() throws Exception {
    Limits limits =
        new Limits(
            Duration.ofSeconds(3),
            Limits.DEFAULTS.dnsTimeout(),
            Limits.DEFAULTS.idleTimeout(),
            Limits.DEFAULTS.maxLifetime(),
            10,
            Limits.DEFAULTS.maxHeaderBytes(),
            Limits.DEFAULTS.ioThreads());
    ProxyConfig config =
        ProxyConfigs.fromAwaitedPolicy(tree("{\"allow\": [\"a.test\"]}"), fixed(limits));
    assertThat(config.limits()).isEqualTo(limits);
    assertThat(config.metrics()).isPresent();
    assertThat(config.listenHost()).isEqualTo("0.0.0.0");
    ProxyConfig repeated =
        ProxyConfigs.fromAwaitedPolicy(
            tree(
                "{\"allow\": [], \"metrics\": \"0.0.0.0:9464\","
                    + " \"limits\": {\"connect_timeout_ms\": 3000, \"max_connections\": 10}}"),
            fixed(limits));
    assertThat(repeated.limits()).isEqualTo(limits);
  }

  @Test
  void anythingThatContradictsTheStartIsRefused() {
    ProxyConfig start = fixed(Limits.DEFAULTS);
    assertThatThrownBy(
            () ->
                ProxyConfigs.fromAwaitedPolicy(
                    tree("{\"allow\": [], \"metrics\": \"0.0.0.0:9999\"}"), start))
        .isInstanceOf(InvalidProxyConfigException.class)
        .hasMessageContaining("metrics: '0.0.0.0:9999' is not where this proxy serves metrics");
    assertThatThrownBy(
            () ->
                ProxyConfigs.fromAwaitedPolicy(
                    tree("{\"allow\": [], \"listen\": \"0.0.0.0:3129\"}"), start))
        .hasMessageContaining("listen: '0.0.0.0:3129' is not where this proxy listens");
    assertThatThrownBy(
            () ->
                ProxyConfigs.fromAwaitedPolicy(
                    tree("{\"allow\": [], \"decisions\": \"/tmp/elsewhere\"}"), start))
        .hasMessageContaining("decisions: '/tmp/elsewhere'");
    assertThatThrownBy(
            () ->
                ProxyConfigs.fromAwaitedPolicy(
                    tree("{\"allow\": [], \"limits\": {\"io_threads\": 7}}"), start))
        .hasMessageContaining("limits: differ");
    assertThatThrownBy(() -> ProxyConfigs.fromAwaitedPolicy(tree("{}"), start))
        .hasMessageContaining("policy on standard input: ")
        .hasMessageContaining("allow");
    assertThatThrownBy(() -> ProxyConfigs.fromAwaitedPolicy(tree("[1]"), start))
        .hasMessageStartingWith("policy on standard input: ");
  }

  @Test
  void theChannelReadsOneDocumentAtATimeWithoutWaitingForTheEnd() {
    // The second document never ends: the first must still be read.
    InputStream endless =
        new SequenceInputStream(
            new ByteArrayInputStream(
                "{\"allow\": [\"a.test\"]}\n{\"allow\": [".getBytes(StandardCharsets.UTF_8)),
            new InputStream() {
              @Override
              public int read() {
                return -1;
              }
            });
    PolicyChannel channel = new PolicyChannel(endless);
    assertThat(channel.next()).hasValueSatisfying(doc -> assertThat(doc).isInstanceOf(Map.class));
    assertThatThrownBy(channel::next).isInstanceOf(InvalidProxyConfigException.class);
    PolicyChannel empty = new PolicyChannel(new ByteArrayInputStream(new byte[0]));
    assertThat(empty.next()).isEmpty();
    PolicyChannel blank =
        new PolicyChannel(new ByteArrayInputStream(" \n\t ".getBytes(StandardCharsets.UTF_8)));
    assertThat(blank.next()).isEmpty();
  }

  @Test
  void theChannelRefusesDuplicateKeysAndMoreThanItsCap() {
    assertThatThrownBy(
            () ->
                new PolicyChannel(
                        new ByteArrayInputStream(
                            "{\"allow\": [], \"allow\": [\"a.test\"]}"
                                .getBytes(StandardCharsets.UTF_8)))
                    .next())
        .hasMessageContaining("Duplicate field 'allow'");
    byte[] huge = new byte[PolicyChannel.MAX_BYTES + 10];
    java.util.Arrays.fill(huge, (byte) ' ');
    huge[huge.length - 2] = '{';
    huge[huge.length - 1] = '}';
    assertThatThrownBy(() -> new PolicyChannel(new ByteArrayInputStream(huge)).next())
        .isInstanceOf(InvalidProxyConfigException.class)
        .hasMessageContaining("more than " + PolicyChannel.MAX_BYTES + " bytes");
  }
}
