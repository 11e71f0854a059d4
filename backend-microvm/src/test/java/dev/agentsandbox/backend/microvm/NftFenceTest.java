package dev.agentsandbox.backend.microvm;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class NftFenceTest {
  private final NftFence fence = new NftFence(2_100_000, 2_100_063);
  private final NftFence.Slot slot =
      new NftFence.Slot(
          "abc123",
          "asbv3",
          "10.213.0.14",
          "10.213.0.13",
          3128,
          2_100_003,
          List.of("198.18.78.0/24", "fd00::/8"));

  @Test
  void theTableIsTheProjectsOwnAndTouchesNoOther() {
    String table = fence.table(List.of("10.255.255.53"));
    assertThat(table.lines().filter(l -> l.startsWith("table ") || l.startsWith("flush ")))
        .allMatch(l -> l.contains(" inet agent_sandbox"));
    assertThat(table).doesNotContain("delete").doesNotContain("flush ruleset");
  }

  @Test
  void tapsReachOnlyTheirProxyAndNothingIsForwarded() {
    String table = fence.table(List.of());
    assertThat(table)
        .contains(
            "iifname \"asbv*\" iifname . ip saddr . ip daddr . tcp dport @vm_proxy accept\n    iifname \"asbv*\" drop")
        .contains("iifname \"asbv*\" drop\n    oifname \"asbv*\" drop")
        .contains("iifname \"asbv*\" meta nfproto != ipv4 drop")
        .contains("iifname \"asbv*\" iifname . ip saddr != @vm_sources drop");
    // Nothing from a tap is accepted anywhere else.
    assertThat(table.lines().filter(l -> l.contains("iifname \"asbv*\"") && l.contains("accept")))
        .hasSize(1);
  }

  @Test
  void theProxiesUidsAreKeptFromPrivateAddresses() {
    String table = fence.table(List.of("10.255.255.53"));
    assertThat(table)
        .contains("meta skuid 2100000-2100063 jump proxy_out")
        .contains("ip daddr @private4 drop")
        .contains("ip6 daddr @private6 drop")
        .contains("127.0.0.0/8")
        .contains("169.254.0.0/16")
        .contains("elements = { 10.255.255.53 }");
  }

  @Test
  void aRunsElementsNameItAndItsExemptionsAreIpv4Only() {
    String add = NftFence.addElements(slot);
    assertThat(add.lines())
        .containsExactly(
            "add element inet agent_sandbox vm_sources { \"asbv3\" . 10.213.0.14 comment \"run abc123\" }",
            "add element inet agent_sandbox vm_proxy { \"asbv3\" . 10.213.0.14 . 10.213.0.13 . 3128 comment \"run abc123\" }",
            "add element inet agent_sandbox proxy_exempt { 2100003 . 198.18.78.0/24 comment \"run abc123\" }");
    assertThat(NftFence.deleteElements(slot)).hasSize(3);
  }
}
