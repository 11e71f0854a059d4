package dev.agentsandbox.backend.microvm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The fence's table ({@link NftFence#table}, with one run's elements), loaded into a network
 * namespace that plays the host, and attacked from a namespace that plays the guest behind a veth
 * named like a tap ({@code asbv5}): what the guest may not reach must be refused at once (a TCP
 * reset, an ICMP administratively prohibited), while a packet with a forged source or one that is
 * not IPv4 must still get no answer at all — neither to the guest nor to the third party whose
 * address it forged (the "victim" namespace, which counts what it receives). Nothing here touches
 * the host's own namespace: the links, the table and the listeners live in the three namespaces the
 * test creates and deletes. The probes are {@code fence-probe.py} (Python's standard library), run
 * in a namespace with {@code ip netns exec}.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class NftFenceNamespaceIT {
  private static final String SUFFIX = Long.toString(ProcessHandle.current().pid());
  private static final String HOST = "asbnf-h" + SUFFIX;
  private static final String GUEST = "asbnf-g" + SUFFIX;
  private static final String VICTIM = "asbnf-v" + SUFFIX;
  private static final String TAP = "asbv5";
  private static final String TAP_ADDRESS = "10.213.0.1";
  private static final String GUEST_ADDRESS = "10.213.0.2";
  private static final String HOST_OTHER_ADDRESS = "198.18.115.1";
  private static final String UPLINK_ADDRESS = "198.18.116.254";
  private static final String VICTIM_ADDRESS = "198.18.116.1";

  /** An address of the victim's that the guest forges (the victim's own stays routable). */
  private static final String FORGED_ADDRESS = "198.18.116.7";

  private static final String TAP_V6 = "fd00:5::1";
  private static final String GUEST_V6 = "fd00:5::2";
  private static final int PROXY_PORT = 3128;

  /** Longer than any answer takes; a probe that reaches it prints "timeout". */
  private static final String ANSWER_SECONDS = "20";

  /** How long a probe that expects no answer waits for one. */
  private static final String SILENCE_SECONDS = "3";

  private static Path probe;
  private static final List<Process> listeners = new ArrayList<>();

  @BeforeAll
  static void standUp() throws Exception {
    if (!"0".equals(run(List.of("id", "-u")).strip())) {
      fail("NftFenceNamespaceIT needs root (network namespaces, nftables)");
    }
    probe = Files.createTempFile("fence-probe", ".py");
    try (InputStream in = NftFenceNamespaceIT.class.getResourceAsStream("fence-probe.py")) {
      Files.write(probe, in.readAllBytes());
    }
    deleteNamespaces();
    for (String ns : List.of(HOST, GUEST, VICTIM)) {
      check("ip", "netns", "add", ns);
      check("ip", "-n", ns, "link", "set", "lo", "up");
    }
    // The tap: the host's end named like the backend's taps, the guest's end its eth0.
    check(
        "ip", "-n", HOST, "link", "add", TAP, "type", "veth", "peer", "name", "eth0", "netns",
        GUEST);
    check("ip", "-n", HOST, "addr", "add", TAP_ADDRESS + "/30", "dev", TAP);
    check("ip", "-n", HOST, "-6", "addr", "add", TAP_V6 + "/64", "dev", TAP, "nodad");
    check("ip", "-n", HOST, "link", "set", TAP, "up");
    check("ip", "-n", GUEST, "addr", "add", GUEST_ADDRESS + "/30", "dev", "eth0");
    check("ip", "-n", GUEST, "-6", "addr", "add", GUEST_V6 + "/64", "dev", "eth0", "nodad");
    check("ip", "-n", GUEST, "link", "set", "eth0", "up");
    check("ip", "-n", GUEST, "route", "add", "default", "via", TAP_ADDRESS);
    // Neighbour discovery is not IPv4 and so never gets through; the guest is told the MAC.
    Matcher mac =
        Pattern.compile("link/ether ([0-9a-f:]{17})")
            .matcher(run(List.of("ip", "-n", HOST, "-o", "link", "show", TAP)));
    assertThat(mac.find()).as("the tap's MAC").isTrue();
    check(
        "ip",
        "-n",
        GUEST,
        "-6",
        "neigh",
        "replace",
        TAP_V6,
        "lladdr",
        mac.group(1),
        "dev",
        "eth0",
        "nud",
        "permanent");
    // And the host is told the guest's, so that only the fence (not a failed neighbour lookup)
    // stands between an IPv6 packet and an answer.
    Matcher guestMac =
        Pattern.compile("link/ether ([0-9a-f:]{17})")
            .matcher(run(List.of("ip", "-n", GUEST, "-o", "link", "show", "eth0")));
    assertThat(guestMac.find()).as("the guest's MAC").isTrue();
    check(
        "ip",
        "-n",
        HOST,
        "-6",
        "neigh",
        "replace",
        GUEST_V6,
        "lladdr",
        guestMac.group(1),
        "dev",
        TAP,
        "nud",
        "permanent");
    // Another address of the host's, and an uplink to the victim, whom the host forwards to.
    check("ip", "-n", HOST, "addr", "add", HOST_OTHER_ADDRESS + "/32", "dev", "lo");
    check(
        "ip", "-n", HOST, "link", "add", "up0", "type", "veth", "peer", "name", "eth0", "netns",
        VICTIM);
    check("ip", "-n", HOST, "addr", "add", UPLINK_ADDRESS + "/24", "dev", "up0");
    check("ip", "-n", HOST, "link", "set", "up0", "up");
    check("ip", "-n", VICTIM, "addr", "add", VICTIM_ADDRESS + "/24", "dev", "eth0");
    check("ip", "-n", VICTIM, "addr", "add", FORGED_ADDRESS + "/24", "dev", "eth0");
    check("ip", "-n", VICTIM, "link", "set", "eth0", "up");
    check("ip", "-n", VICTIM, "route", "add", "default", "via", UPLINK_ADDRESS);
    // The host forwards, and does no reverse-path filtering: the fence alone must hold.
    for (String key :
        List.of(
            "net.ipv4.ip_forward=1",
            "net.ipv4.conf.all.rp_filter=0",
            "net.ipv4.conf.default.rp_filter=0",
            "net.ipv4.conf." + TAP + ".rp_filter=0",
            "net.ipv4.conf.up0.rp_filter=0")) {
      check("ip", "netns", "exec", HOST, "sysctl", "-q", "-w", key);
    }
    // The guest forges a source of the victim's.
    check("ip", "-n", GUEST, "addr", "add", FORGED_ADDRESS + "/32", "dev", "eth0");
    // What reaches the guest and the victim is counted.
    String counting =
        "table inet asb_count {\n"
            + "  counter rst { }\n"
            + "  counter unreachable { }\n"
            + "  chain input { type filter hook input priority filter; policy accept;\n"
            + "    tcp flags & rst == rst counter name rst\n"
            + "    icmp type destination-unreachable counter name unreachable\n"
            + "  }\n"
            + "}\n";
    nft(GUEST, counting);
    nft(VICTIM, counting);
    // The fence, exactly as the backend loads it, and one run's elements.
    NftFence fence = new NftFence(2_100_000, 2_100_063);
    NftFence.Slot slot =
        new NftFence.Slot(
            "itnetns", TAP, GUEST_ADDRESS, TAP_ADDRESS, PROXY_PORT, 2_100_005, List.of());
    nft(HOST, fence.table(List.of()) + NftFence.addElements(slot));
    listeners.add(listen(HOST, "host-service", TAP_ADDRESS + ":" + PROXY_PORT));
    listeners.add(listen(VICTIM, "victim-service", null));
    for (String[] where :
        List.of(new String[] {HOST, TAP_ADDRESS}, new String[] {VICTIM, VICTIM_ADDRESS})) {
      String answer = "";
      for (int i = 0; i < 50 && !answer.startsWith("connected"); i++) {
        answer = probe(where[0], "tcp", "-", where[1], "8080", "2");
        if (!answer.startsWith("connected")) {
          Thread.sleep(200);
        }
      }
      assertThat(answer).as("the listener in " + where[0]).startsWith("connected");
    }
  }

  @AfterAll
  static void tearDown() throws Exception {
    for (Process p : listeners) {
      p.destroy();
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly();
      }
    }
    deleteNamespaces();
    if (probe != null) {
      Files.deleteIfExists(probe);
    }
  }

  @Test
  @Order(1)
  void controlTheServicesTheGuestMayNotReachAreThereAndItsProxyAnswersIt() throws Exception {
    assertThat(probe(HOST, "tcp", "-", TAP_ADDRESS, "8080", ANSWER_SECONDS))
        .isEqualTo("connected host-service");
    assertThat(probe(HOST, "tcp", "-", HOST_OTHER_ADDRESS, "8080", ANSWER_SECONDS))
        .isEqualTo("connected host-service");
    assertThat(probe(HOST, "tcp", "-", VICTIM_ADDRESS, "8080", ANSWER_SECONDS))
        .isEqualTo("connected victim-service");
    assertThat(probe(HOST, "tcp", "-", TAP_V6, "8080", ANSWER_SECONDS))
        .isEqualTo("connected host-service");
    assertThat(probe(HOST, "udp", "-", HOST_OTHER_ADDRESS, "5353", ANSWER_SECONDS))
        .isEqualTo("answered host-service ping");
    assertThat(probe(GUEST, "tcp", "-", TAP_ADDRESS, Integer.toString(PROXY_PORT), ANSWER_SECONDS))
        .isEqualTo("connected proxy");
  }

  @Test
  @Order(2)
  void aGuestsTcpToAnythingButItsProxyIsResetNotLeftToTimeOut() throws Exception {
    long resets = counter(GUEST, "rst");
    // The tap's host address on another port (a service listens there, and on a closed port), the
    // host's other address, and an address the host would forward to.
    assertThat(probe(GUEST, "tcp", "-", TAP_ADDRESS, "8080", ANSWER_SECONDS)).isEqualTo("refused");
    assertThat(probe(GUEST, "tcp", "-", TAP_ADDRESS, "22", ANSWER_SECONDS)).isEqualTo("refused");
    assertThat(probe(GUEST, "tcp", "-", HOST_OTHER_ADDRESS, "8080", ANSWER_SECONDS))
        .isEqualTo("refused");
    assertThat(probe(GUEST, "tcp", "-", VICTIM_ADDRESS, "8080", ANSWER_SECONDS))
        .isEqualTo("refused");
    assertThat(counter(GUEST, "rst") - resets).as("resets the guest received").isEqualTo(4);
  }

  @Test
  @Order(3)
  void aGuestsOtherTrafficIsAnsweredAdministrativelyProhibited() throws Exception {
    assertThat(probe(GUEST, "udp", "-", HOST_OTHER_ADDRESS, "5353", ANSWER_SECONDS))
        .isEqualTo("icmp type=3 code=13");
    assertThat(probe(GUEST, "udp", "-", VICTIM_ADDRESS, "5353", ANSWER_SECONDS))
        .isEqualTo("icmp type=3 code=13");
  }

  @Test
  @Order(4)
  void aForgedSourceGetsNoAnswerNeitherToTheGuestNorToTheAddressItForged() throws Exception {
    // Control: what the host sends the victim is counted there.
    long resets = counter(VICTIM, "rst");
    long unreachable = counter(VICTIM, "unreachable");
    assertThat(probe(VICTIM, "tcp", "-", HOST_OTHER_ADDRESS, "9", ANSWER_SECONDS))
        .isEqualTo("refused");
    assertThat(probe(VICTIM, "udp", "-", HOST_OTHER_ADDRESS, "9", ANSWER_SECONDS))
        .isEqualTo("icmp type=3 code=3");
    assertThat(counter(VICTIM, "rst")).isEqualTo(resets + 1);
    assertThat(counter(VICTIM, "unreachable")).isEqualTo(unreachable + 1);

    long guestResets = counter(GUEST, "rst");
    long guestUnreachable = counter(GUEST, "unreachable");
    for (String target : List.of(HOST_OTHER_ADDRESS, TAP_ADDRESS)) {
      assertThat(probe(GUEST, "tcp", FORGED_ADDRESS, target, "8080", SILENCE_SECONDS))
          .as("TCP from a forged source to " + target)
          .isEqualTo("timeout");
      assertThat(probe(GUEST, "udp", FORGED_ADDRESS, target, "5353", SILENCE_SECONDS))
          .as("UDP from a forged source to " + target)
          .isEqualTo("timeout");
    }
    // And to the proxy itself: a forged source does not match the run's element either.
    assertThat(
            probe(
                GUEST,
                "tcp",
                FORGED_ADDRESS,
                TAP_ADDRESS,
                Integer.toString(PROXY_PORT),
                SILENCE_SECONDS))
        .isEqualTo("timeout");
    assertThat(counter(VICTIM, "rst"))
        .as("resets sent to the forged address")
        .isEqualTo(resets + 1);
    assertThat(counter(VICTIM, "unreachable"))
        .as("ICMP errors sent to the forged address")
        .isEqualTo(unreachable + 1);
    assertThat(counter(GUEST, "rst")).isEqualTo(guestResets);
    assertThat(counter(GUEST, "unreachable")).isEqualTo(guestUnreachable);
  }

  @Test
  @Order(5)
  void ipv6FromAGuestGetsNoAnswer() throws Exception {
    long resets = counter(GUEST, "rst");
    assertThat(probe(GUEST, "tcp", "-", TAP_V6, "8080", SILENCE_SECONDS)).isEqualTo("timeout");
    assertThat(probe(GUEST, "tcp", "-", TAP_V6, "22", SILENCE_SECONDS)).isEqualTo("timeout");
    assertThat(counter(GUEST, "rst")).isEqualTo(resets);
  }

  /**
   * Issue 26 item 10: the proxy listens on the tap's host address, which every local process of the
   * host can reach. The fence keeps it the VM's alone: the host's own processes are refused at
   * once, another host's packets are dropped, the guest still connects, and the same address keeps
   * serving the host on its other ports.
   */
  @Test
  @Order(6)
  void theRunsProxyAnswersItsVmAloneNotTheHostNorAnotherHost() throws Exception {
    String port = Integer.toString(PROXY_PORT);
    assertThat(probe(HOST, "tcp", "-", TAP_ADDRESS, port, ANSWER_SECONDS))
        .as("a local process on the host")
        .isEqualTo("refused");
    assertThat(probe(VICTIM, "tcp", "-", TAP_ADDRESS, port, SILENCE_SECONDS))
        .as("another host, through the host's uplink")
        .isEqualTo("timeout");
    assertThat(probe(GUEST, "tcp", "-", TAP_ADDRESS, port, ANSWER_SECONDS))
        .as("the run's VM")
        .isEqualTo("connected proxy");
    assertThat(probe(HOST, "tcp", "-", TAP_ADDRESS, "8080", ANSWER_SECONDS))
        .as("the host, on another port of the same address")
        .isEqualTo("connected host-service");
  }

  /** Last: it spends the tap's allowance of answers. */
  @Test
  @Order(7)
  void theAnswersToOneTapAreLimited() throws Exception {
    int sent = 2000;
    long before = counter(GUEST, "rst");
    String flood = probe(GUEST, "flood", HOST_OTHER_ADDRESS, "8080", Integer.toString(sent));
    Matcher took = Pattern.compile("sent \\d+ in ([0-9.]+) seconds").matcher(flood);
    assertThat(took.matches()).as(flood).isTrue();
    Thread.sleep(1000);
    long answered = counter(GUEST, "rst") - before;
    // 100 a second after a burst of 100 (NftFence.REJECT_RATE): the bound grows with the time the
    // flood took (plus slack for the answers in flight), so a slow machine only loosens it.
    double seconds = Double.parseDouble(took.group(1)) + 2;
    assertThat(answered).as("resets for %d SYNs sent in %s", sent, flood).isPositive();
    assertThat((double) answered)
        .as("resets for %d SYNs sent in %s", sent, flood)
        .isLessThanOrEqualTo(100 + 100 * seconds)
        .isLessThan(sent);
  }

  private static Process listen(String ns, String name, String proxy) throws IOException {
    List<String> command =
        new ArrayList<>(
            List.of("ip", "netns", "exec", ns, "python3", probe.toString(), "serve", name));
    if (proxy != null) {
      command.add(proxy);
    }
    return new ProcessBuilder(command)
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.DISCARD)
        .start();
  }

  private static String probe(String ns, String... args) throws Exception {
    List<String> command =
        new ArrayList<>(List.of("ip", "netns", "exec", ns, "python3", probe.toString()));
    command.addAll(List.of(args));
    return run(command).strip();
  }

  private static long counter(String ns, String name) throws Exception {
    String listing =
        run(
            List.of(
                "ip", "netns", "exec", ns, "nft", "list", "counter", "inet", "asb_count", name));
    Matcher m = Pattern.compile("packets (\\d+)").matcher(listing);
    assertThat(m.find()).as(listing).isTrue();
    return Long.parseLong(m.group(1));
  }

  private static void nft(String ns, String script) throws Exception {
    Path file = Files.createTempFile("fence", ".nft");
    try {
      Files.writeString(file, script);
      check("ip", "netns", "exec", ns, "nft", "-f", file.toString());
    } finally {
      Files.deleteIfExists(file);
    }
  }

  private static void deleteNamespaces() throws Exception {
    for (String ns : List.of(HOST, GUEST, VICTIM)) {
      if (Files.exists(Path.of("/run/netns", ns))) {
        check("ip", "netns", "del", ns);
      }
    }
  }

  private static void check(String... command) throws Exception {
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!process.waitFor(30, TimeUnit.SECONDS) || process.exitValue() != 0) {
      process.destroyForcibly();
      fail(String.join(" ", command) + " failed: " + out);
    }
  }

  /** Runs a command (bounded at 60 s) and returns its output, standard error included. */
  private static String run(List<String> command) throws Exception {
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!process.waitFor(60, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      fail(String.join(" ", command) + " did not end within 60 s");
    }
    return out;
  }
}
