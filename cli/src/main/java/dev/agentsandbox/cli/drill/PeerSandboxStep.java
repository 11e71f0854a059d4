package dev.agentsandbox.cli.drill;

import static dev.agentsandbox.cli.drill.Judgements.deniedByProxy;
import static dev.agentsandbox.cli.drill.Judgements.deniedInAudit;
import static dev.agentsandbox.cli.drill.Judgements.number;
import static dev.agentsandbox.cli.drill.Judgements.show;
import static dev.agentsandbox.cli.drill.Judgements.torndown;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The step that attacks another live sandbox: a second run of the agent (the target, {@link
 * DrillScript#ANOTHER_SANDBOX_TARGET}) listens and says where it is; the attack ({@link
 * DrillScript#ANOTHER_SANDBOX}) gets what it printed as arguments and connects to each address
 * directly, through its own proxy and through the target's. What the attack learns is checked here
 * against the address grammar first: the target's output is a sandbox's.
 */
final class PeerSandboxStep {
  /**
   * The port the target of {@link #anotherSandbox} listens on (unprivileged: it runs as nobody).
   */
  static final int PEER_PORT = 8080;

  private PeerSandboxStep() {}

  static DrillStep anotherSandbox(DrillSetup s) {
    return new DrillStep(
        "another-live-sandbox",
        "start a second run of the agent that listens on port "
            + PEER_PORT
            + " and prints its addresses and its proxy's, then, from this run, connect to it"
            + " directly, through this run's proxy, and through the other run's proxy",
        DrillScript.ANOTHER_SANDBOX.command(),
        Map.of(),
        false,
        PeerSandboxStep::judge,
        new DrillStep.Peer(peerListener(), PeerSandboxStep::learnedFromPeer));
  }

  /**
   * The target: a run of the same agent that listens on {@link #PEER_PORT} (its argument) and
   * counts every connection it accepts, printing the count each time. It first connects to itself
   * once, so that a count of 1 printed before it says where it is proves that the counting works in
   * this sandbox; then it prints what an attacker who knows it would use: its addresses and its
   * proxy's address.
   */
  static List<String> peerListener() {
    return DrillScript.ANOTHER_SANDBOX_TARGET.command(Integer.toString(PEER_PORT));
  }

  /**
   * What the attack learns from the target's output: the port, the target's proxy and its
   * addresses, each checked against the address grammar (the target's output is a sandbox's and
   * becomes the attack's arguments); empty until the target has printed all of it.
   */
  static Optional<List<String>> learnedFromPeer(DrillObservation target) {
    if (target.marker("ready").isEmpty()
        || target.marker("listening").filter(l -> !l.equals("0")).isEmpty()
        || target.marker("self-check").filter("1"::equals).isEmpty()) {
      return Optional.empty();
    }
    List<String> addresses = peerAddresses(target);
    Optional<String> proxy =
        target.marker("proxy").filter(p -> DrillSetup.TARGET.matcher(p).matches());
    if (addresses.isEmpty() || proxy.isEmpty()) {
      return Optional.empty();
    }
    List<String> args = new ArrayList<>(List.of(Integer.toString(PEER_PORT), proxy.get()));
    args.addAll(addresses);
    return Optional.of(args);
  }

  static List<String> peerAddresses(DrillObservation target) {
    return target.markers().getOrDefault("address", List.of()).stream()
        .filter(a -> DrillSetup.ADDRESS.matcher(a).matches() && !a.startsWith("127."))
        .distinct()
        .toList();
  }

  private static List<DrillCheck> judge(DrillObservation seen) {
    DrillObservation target = seen.peer();
    if (target == null) {
      return List.of(
          DrillCheck.of(
              "target", "a second live run to attack", false, "the target run was not started"));
    }
    List<String> addresses = peerAddresses(target);
    Optional<List<String>> learned = learnedFromPeer(target);
    List<DrillCheck> checks = new ArrayList<>();
    checks.add(
        DrillCheck.of(
            "target",
            "the other run listened, counted its own check connection (so counting works in"
                + " this sandbox), printed its addresses and its proxy's, and was still live when"
                + " the attack ended (the drill killed it then: status killed)",
            learned.isPresent() && "killed".equals(target.status()),
            "listening "
                + show(target.marker("listening"))
                + ", self-check "
                + show(target.marker("self-check"))
                + ", addresses "
                + addresses
                + ", proxy "
                + show(target.marker("proxy"))
                + ", run "
                + target.runId()
                + " status "
                + target.status()));
    Map<String, List<String>> m = seen.markers();
    List<String> direct = m.getOrDefault("direct", List.of());
    List<String> directExits = m.getOrDefault("direct-exit", List.of());
    List<String> reached = new ArrayList<>();
    for (int i = 0; i < direct.size(); i++) {
      Integer exit = i < directExits.size() ? Judgements.parse(directExits.get(i)) : null;
      if (exit == null || !Judgements.NO_CONNECTION.contains(exit)) {
        reached.add(direct.get(i) + " (curl exit " + (exit == null ? "?" : exit) + ")");
      }
    }
    boolean allTried =
        seen.marker("done").isPresent() && !addresses.isEmpty() && direct.containsAll(addresses);
    checks.add(
        DrillCheck.of(
            "network",
            "no TCP connection to any of the other run's addresses on port "
                + PEER_PORT
                + " (curl exit 7 or 28 each)",
            allTried && reached.isEmpty(),
            !allTried
                ? "the script did not try every address of the other run (tried " + direct + ")"
                : reached.isEmpty()
                    ? direct.size() + " address(es), none connected"
                    : "connected: " + String.join(", ", reached)));
    List<String> proxied = m.getOrDefault("proxied", List.of());
    List<String> codes = m.getOrDefault("proxied-code", List.of());
    boolean all403 =
        !addresses.isEmpty()
            && proxied.containsAll(addresses)
            && codes.size() == proxied.size()
            && codes.stream().allMatch("403"::equals);
    checks.add(
        DrillCheck.of(
            "workload",
            "through this run's proxy: 403 for each address",
            all403,
            "codes " + codes + " for " + proxied));
    for (String address : addresses) {
      checks.add(
          deniedByProxy(
              seen, address, List.of(PEER_PORT), Set.of("ip-literal", "non-public-address")));
      checks.add(deniedInAudit(seen, address, List.of(PEER_PORT)));
    }
    Optional<Integer> peerProxyExit = number(seen, "peer-proxy-exit");
    checks.add(
        DrillCheck.of(
            "network",
            "no TCP connection to the other run's proxy "
                + show(target.marker("proxy"))
                + " (curl exit 7 or 28)",
            seen.marker("peer-proxy").equals(target.marker("proxy"))
                && peerProxyExit.filter(Judgements.NO_CONNECTION::contains).isPresent(),
            "tried " + show(seen.marker("peer-proxy")) + ", curl exit " + show(peerProxyExit)));
    // Its own check is connection 1: any other count is a connection from outside.
    List<String> counts = target.markers().getOrDefault("connection", List.of());
    checks.add(
        DrillCheck.of(
            "target",
            "the other run accepted no connection but its own check (its count stayed at 1), and"
                + " its proxy made no decision",
            learned.isPresent() && counts.equals(List.of("1")) && target.egress().isEmpty(),
            "connection counts printed "
                + counts
                + ", "
                + target.egress().size()
                + " decision(s) of its proxy"
                + (target.egress().isEmpty() ? "" : ": " + target.egress())));
    checks.add(torndown(seen));
    checks.add(torndown(target));
    return checks;
  }
}
