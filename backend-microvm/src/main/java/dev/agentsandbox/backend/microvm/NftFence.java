package dev.agentsandbox.backend.microvm;

import dev.agentsandbox.policy.net.AddressClassifier;
import dev.agentsandbox.policy.net.Cidr;
import java.util.ArrayList;
import java.util.List;

/**
 * The project's own nftables table, {@code inet agent_sandbox}, and each run's elements in it. No
 * other table is ever read or changed. The rules are fixed; a run only adds set elements (tagged
 * with a comment naming the run), so adding and removing a VM is one atomic transaction each.
 *
 * <p>What the rules enforce, for every interface named {@code asbv*} (the VMs' taps):
 *
 * <ul>
 *   <li>anti-spoofing: only IPv4 from the address the VM was given on its own tap gets in at all;
 *   <li>into the host: only TCP to the run's proxy, on the tap's host address and the proxy port;
 *       everything else (other ports, other host addresses, other taps' addresses, ICMP, DNS) is
 *       refused;
 *   <li>through the host: nothing is forwarded from or to a tap (no other VM, no outside address,
 *       no metadata address): what a VM sends is refused, what is sent to a tap is dropped;
 *   <li>refused, not dropped: a VM's packet that passed the anti-spoofing check and is not for its
 *       proxy is answered in chain {@code vm_refuse} (TCP with a reset, anything else with ICMP
 *       administratively prohibited), so a client there fails at once instead of waiting out its
 *       time-out. Only a checked source is ever answered (the check is made again right before the
 *       answer), so a VM cannot aim the answers at a third party by forging its source; answers are
 *       limited per tap ({@link #REJECT_RATE}) and above that the packets are dropped as before;
 *       what is not IPv4 or not addressed to the host alone (broadcast, multicast) is dropped.
 *   <li>the run's proxy answers its VM alone: a connection to a proxy's address and port that does
 *       not come from its VM's tap is refused (a reset, for a local process on the host) or dropped
 *       (from any other interface), so no local user of the host, no container and no other host
 *       can use a run's proxy, reach its internal destinations or write into its audit trail (issue
 *       26 item 10);
 *   <li>the proxies themselves (by uid) open no connection to a private, loopback, link-local or
 *       special-purpose address except the destinations the run declares internal and the host's
 *       name servers on port 53 (answers on connections made to them are not restricted).
 * </ul>
 */
final class NftFence {
  static final String FAMILY = "inet";
  static final String TABLE = "agent_sandbox";
  static final String TAP_PREFIX = "asbv";

  /**
   * How many refused packets a tap gets an answer for: a VM flooding forbidden addresses makes the
   * host answer at most this many a second (after a burst of as many), and its further packets are
   * dropped, as they all were before answers were given.
   */
  static final String REJECT_RATE = "100/second burst 100 packets";

  /**
   * Addresses no proxy may reach unless the run declares them internal: what the proxy's own
   * address check refuses ({@link AddressClassifier#FENCE_V4}, {@link AddressClassifier#FENCE_V6}),
   * no range inside another, as an interval set needs.
   */
  static final List<String> PRIVATE_V4 =
      AddressClassifier.FENCE_V4.stream().map(Cidr::toString).toList();

  static final List<String> PRIVATE_V6 =
      AddressClassifier.FENCE_V6.stream().map(Cidr::toString).toList();

  private final int proxyUidFirst;
  private final int proxyUidLast;

  NftFence(int proxyUidFirst, int proxyUidLast) {
    this.proxyUidFirst = proxyUidFirst;
    this.proxyUidLast = proxyUidLast;
  }

  /**
   * The whole table as {@code nft -f} input, one transaction: declares the table, its sets and
   * chains (a no-op where they exist), empties the chains and the resolver set, and fills them
   * again. Loading it twice gives the same table, keeps the runs' elements, and touches nothing
   * outside the table.
   */
  String table(List<String> resolvers) {
    String wildcard = "\"" + TAP_PREFIX + "*\"";
    List<String> chains =
        List.of("prerouting", "input", "forward", "output", "proxy_out", "vm_refuse");
    List<String> lines = new ArrayList<>();
    lines.add("table " + FAMILY + " " + TABLE + " {");
    lines.add("  set vm_sources { typeof iifname . ip saddr; }");
    lines.add("  set vm_proxy { typeof iifname . ip saddr . ip daddr . tcp dport; }");
    lines.add("  set proxy_listen { typeof ip daddr . tcp dport; }");
    lines.add("  set proxy_exempt { typeof meta skuid . ip daddr; flags interval; }");
    lines.add("  set resolvers { type ipv4_addr; flags interval; }");
    lines.add("  set private4 { type ipv4_addr; flags interval; }");
    lines.add("  set private6 { type ipv6_addr; flags interval; }");
    // One element per tap that was refused something in the last minute, holding its rate limit.
    lines.add(
        "  set vm_reject_rate { typeof iifname; size 65536; flags dynamic,timeout; timeout 1m; }");
    lines.add("  chain prerouting { type filter hook prerouting priority raw; policy accept; }");
    lines.add("  chain input { type filter hook input priority filter - 10; policy accept; }");
    lines.add("  chain forward { type filter hook forward priority filter - 10; policy accept; }");
    lines.add("  chain output { type filter hook output priority filter - 10; policy accept; }");
    lines.add("  chain proxy_out { }");
    lines.add("  chain vm_refuse { }");
    lines.add("}");
    for (String chain : chains) {
      lines.add("flush chain " + FAMILY + " " + TABLE + " " + chain);
    }
    for (String set : List.of("resolvers", "private4", "private6")) {
      lines.add("flush set " + FAMILY + " " + TABLE + " " + set);
    }
    lines.add("table " + FAMILY + " " + TABLE + " {");
    if (!resolvers.isEmpty()) {
      lines.add(
          "  set resolvers { type ipv4_addr; flags interval; elements = { "
              + String.join(", ", resolvers)
              + " }; }");
    }
    lines.add(
        "  set private4 { type ipv4_addr; flags interval; elements = { "
            + String.join(", ", PRIVATE_V4)
            + " }; }");
    lines.add(
        "  set private6 { type ipv6_addr; flags interval; elements = { "
            + String.join(", ", PRIVATE_V6)
            + " }; }");
    lines.add("  chain prerouting {");
    lines.add("    iifname " + wildcard + " meta nfproto != ipv4 drop");
    lines.add("    iifname " + wildcard + " iifname . ip saddr != @vm_sources drop");
    lines.add("  }");
    lines.add("  chain input {");
    lines.add(
        "    iifname " + wildcard + " iifname . ip saddr . ip daddr . tcp dport @vm_proxy accept");
    // A proxy is its VM's alone: from the host itself (a local user) refused at once; from any
    // other interface (a container's bridge, the LAN) dropped, so a forged source gets no answer.
    // A tap's packets go on to vm_refuse, which checks their source before it answers.
    lines.add("    iifname \"lo\" ip daddr . tcp dport @proxy_listen reject with tcp reset");
    lines.add("    iifname != " + wildcard + " ip daddr . tcp dport @proxy_listen drop");
    lines.add("    iifname " + wildcard + " jump vm_refuse");
    lines.add("    iifname " + wildcard + " drop");
    lines.add("  }");
    lines.add("  chain forward {");
    lines.add("    iifname " + wildcard + " jump vm_refuse");
    lines.add("    iifname " + wildcard + " drop");
    lines.add("    oifname " + wildcard + " drop");
    lines.add("  }");
    // Called from input and forward only (nftables allows reject nowhere else). Every packet that
    // enters meets a verdict (the last rule matches all IPv4, the first drops the rest); should a
    // packet ever come back out, the drop after each jump still ends it, so nothing is accepted.
    // The source is checked again here, not only in prerouting, so that an answer can never go to
    // an address the VM does not own.
    lines.add("  chain vm_refuse {");
    lines.add("    meta nfproto != ipv4 drop");
    lines.add("    meta pkttype != host drop");
    lines.add("    iifname . ip saddr != @vm_sources drop");
    lines.add("    update @vm_reject_rate { iifname limit rate over " + REJECT_RATE + " } drop");
    lines.add("    meta l4proto tcp reject with tcp reset");
    lines.add("    reject with icmp type admin-prohibited");
    lines.add("  }");
    lines.add("  chain output {");
    lines.add("    oifname " + wildcard + " meta nfproto != ipv4 drop");
    lines.add("    meta skuid " + proxyUidFirst + "-" + proxyUidLast + " jump proxy_out");
    lines.add("  }");
    lines.add("  chain proxy_out {");
    // Answers on connections made to the proxy (its VM's, or the host's own health checks); what
    // the proxy itself connects to is judged below.
    lines.add("    ct direction reply accept");
    lines.add("    meta skuid . ip daddr @proxy_exempt accept");
    lines.add("    ip daddr @resolvers udp dport 53 accept");
    lines.add("    ip daddr @resolvers tcp dport 53 accept");
    lines.add("    ip daddr @private4 drop");
    lines.add("    ip6 daddr @private6 drop");
    lines.add("  }");
    lines.add("}");
    return String.join("\n", lines) + "\n";
  }

  /** One run's place in the fence. */
  record Slot(
      String runId,
      String tap,
      String guestAddress,
      String hostAddress,
      int proxyPort,
      int proxyUid,
      List<String> internalCidrs) {
    Slot {
      internalCidrs = List.copyOf(internalCidrs);
    }
  }

  /** The elements of one run, as {@code set -> element} pairs. */
  static List<String[]> elements(Slot slot) {
    String tap = "\"" + slot.tap() + "\"";
    List<String[]> elements = new ArrayList<>();
    elements.add(new String[] {"vm_sources", tap + " . " + slot.guestAddress()});
    elements.add(
        new String[] {
          "vm_proxy",
          tap + " . " + slot.guestAddress() + " . " + slot.hostAddress() + " . " + slot.proxyPort()
        });
    elements.add(new String[] {"proxy_listen", slot.hostAddress() + " . " + slot.proxyPort()});
    for (String cidr : slot.internalCidrs()) {
      if (!cidr.contains(":")) {
        elements.add(new String[] {"proxy_exempt", slot.proxyUid() + " . " + cidr});
      }
    }
    return elements;
  }

  /** The {@code nft -f} transaction that adds one run's elements. */
  static String addElements(Slot slot) {
    StringBuilder script = new StringBuilder();
    for (String[] element : elements(slot)) {
      script
          .append("add element ")
          .append(FAMILY)
          .append(' ')
          .append(TABLE)
          .append(' ')
          .append(element[0])
          .append(" { ")
          .append(element[1])
          .append(" comment \"run ")
          .append(slot.runId())
          .append("\" }\n");
    }
    return script.toString();
  }

  /** The {@code nft} commands that remove one run's elements, one per element. */
  static List<List<String>> deleteElements(Slot slot) {
    List<List<String>> commands = new ArrayList<>();
    for (String[] element : elements(slot)) {
      commands.add(
          List.of("nft", "delete", "element", FAMILY, TABLE, element[0], "{ " + element[1] + " }"));
    }
    return commands;
  }
}
