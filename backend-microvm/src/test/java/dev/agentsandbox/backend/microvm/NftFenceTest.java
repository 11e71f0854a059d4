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
            "iifname \"asbv*\" iifname . ip saddr . ip daddr . tcp dport @vm_proxy accept\n"
                + "    iifname \"lo\" ip daddr . tcp dport @proxy_listen reject with tcp reset\n"
                + "    iifname != \"asbv*\" ip daddr . tcp dport @proxy_listen drop\n"
                + "    iifname \"asbv*\" jump vm_refuse\n"
                + "    iifname \"asbv*\" drop\n  }")
        .contains(
            "chain forward {\n    iifname \"asbv*\" jump vm_refuse\n    iifname \"asbv*\" drop\n"
                + "    oifname \"asbv*\" drop")
        .contains("iifname \"asbv*\" meta nfproto != ipv4 drop")
        .contains("iifname \"asbv*\" iifname . ip saddr != @vm_sources drop");
    // Nothing from a tap is accepted anywhere else.
    assertThat(table.lines().filter(l -> l.contains("iifname \"asbv*\"") && l.contains("accept")))
        .hasSize(1);
  }

  @Test
  void whatATapMayNotSendIsRefusedOnlyToItsOwnCheckedSourceAndAtABoundedRate() {
    String table = fence.table(List.of());
    String refuse = table.substring(table.lastIndexOf("  chain vm_refuse {"));
    refuse = refuse.substring(0, refuse.indexOf("  }\n") + 4);
    // In this order: what is not IPv4, not for this host alone, or not from the tap's own address
    // is dropped before any answer; answers are limited per tap; then a reset or an ICMP error.
    assertThat(refuse)
        .isEqualTo(
            "  chain vm_refuse {\n"
                + "    meta nfproto != ipv4 drop\n"
                + "    meta pkttype != host drop\n"
                + "    iifname . ip saddr != @vm_sources drop\n"
                + "    update @vm_reject_rate { iifname limit rate over 100/second burst 100 packets }"
                + " drop\n"
                + "    meta l4proto tcp reject with tcp reset\n"
                + "    reject with icmp type admin-prohibited\n"
                + "  }\n");
    // Only input and forward (where nftables allows reject) send a tap's packets there; the
    // prerouting drops (anti-spoofing, not IPv4) come first and answer nothing.
    assertThat(table.lines().filter(l -> l.contains("jump vm_refuse"))).hasSize(2);
    assertThat(table.lines().filter(l -> l.contains("reject with"))).hasSize(3);
    // The third: a local process's connection to a run's proxy, refused (issue 26 item 10).
    assertThat(table)
        .contains(
            "    iifname \"lo\" ip daddr . tcp dport @proxy_listen reject with tcp reset\n"
                + "    iifname != \"asbv*\" ip daddr . tcp dport @proxy_listen drop\n"
                + "    iifname \"asbv*\" jump vm_refuse\n");
    String prerouting = table.substring(table.lastIndexOf("  chain prerouting {"));
    prerouting = prerouting.substring(0, prerouting.indexOf("  }\n"));
    assertThat(prerouting).doesNotContain("reject").doesNotContain("vm_refuse");
    assertThat(table)
        .contains("set vm_reject_rate { typeof iifname; size 65536; flags dynamic,timeout;");
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
            "add element inet agent_sandbox proxy_listen { 10.213.0.13 . 3128 comment \"run abc123\" }",
            "add element inet agent_sandbox proxy_exempt { 2100003 . 198.18.78.0/24 comment \"run abc123\" }");
    assertThat(NftFence.deleteElements(slot)).hasSize(4);
  }
}
