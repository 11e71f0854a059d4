package dev.agentsandbox.backend.microvm;

import static dev.agentsandbox.backend.microvm.MicroVmItSupport.SUITE;
import static dev.agentsandbox.backend.microvm.MicroVmItSupport.cleanUpAndAssertNothingLeft;
import static dev.agentsandbox.testing.ItRuns.noEgress;
import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.RunEgress;
import dev.agentsandbox.testing.Host;
import dev.agentsandbox.testing.HostDrill;
import dev.agentsandbox.testing.RecordingListener;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The fence, tried from inside real VMs: VM B serves HTTP on its own address; VM A runs every probe
 * of the table in one script, each section marked with its row's key, and each row judges its
 * section. Rows named "control" show that what the other rows fail to reach is really there. The
 * probe table of the Docker fence ITs, plus the ways around the fence a VM has of its own (the
 * tap's host address on other ports, the other VM's tap address).
 */
class MicroVmFenceIT {
  private static final Pattern SECTION =
      Pattern.compile("=== begin (\\S+)\\n(.*?)=== end \\1 status (\\d+)", Pattern.DOTALL);

  private static MicroVmBackend backend;
  private static HostDrill drill;
  private static MicroVmSandbox a;
  private static MicroVmSandbox b;
  private static final RecordingListener A_OUT = new RecordingListener();
  private static final RecordingListener B_OUT = new RecordingListener();
  private static final Map<String, Section> SECTIONS = new LinkedHashMap<>();
  private static Completion aEnd;

  /**
   * curl's exit status when a connection was refused (CURLE_COULDNT_CONNECT): the fence answered
   * the SYN with a reset. A dropped SYN would end in 28, curl's time-out.
   */
  private static final int REFUSED = 7;

  /** What one probe printed inside VM A, and its exit status. */
  record Section(String output, int status) {}

  /** One row: a probe script (run in VM A, or empty for host-side rows) and its judgement. */
  record Row(String key, String script, Consumer<Section> check) {}

  private static String upstreamUrl() {
    return "http://upstream.test:" + drill.upstreamPort() + "/";
  }

  private static String directUrl() {
    return "http://" + drill.upstreamAddress() + ":" + drill.upstreamPort() + "/";
  }

  private static String metadataUrl() {
    return "http://" + HostDrill.METADATA_ADDRESS + ":" + drill.metadataPort() + "/";
  }

  private static boolean forwarding() {
    try {
      return java.nio.file.Files.readString(java.nio.file.Path.of("/proc/sys/net/ipv4/ip_forward"))
          .strip()
          .equals("1");
    } catch (java.io.IOException e) {
      throw new AssertionError(e);
    }
  }

  static Map<String, Row> table() throws Exception {
    Map<String, Row> rows = new LinkedHashMap<>();
    int hostPort = drill.hostPort();
    rows.put(
        "an allowed name works through the proxy (absolute-form HTTP)",
        new Row(
            "allowed-http",
            "curl -sS -m 60 " + upstreamUrl(),
            s -> assertThat(s.output()).as(s.toString()).contains("hello from upstream")));
    rows.put(
        "an allowed name works through the proxy (CONNECT tunnel)",
        new Row(
            "allowed-connect",
            "curl -sS -m 60 -p " + upstreamUrl(),
            s -> assertThat(s.output()).as(s.toString()).contains("hello from upstream")));
    rows.put(
        "a name not on the list is refused by the proxy",
        new Row(
            "denied-name",
            "curl -sS -m 60 -i http://denied.test:" + drill.upstreamPort() + "/",
            s ->
                assertThat(s.output())
                    .as(s.toString())
                    .contains(" 403")
                    .containsIgnoringCase("X-Agent-Sandbox-Denied")
                    .doesNotContain("hello from upstream")));
    rows.put(
        "an address instead of a name is refused by the proxy",
        new Row(
            "ip-literal",
            "curl -sS -m 60 -i " + directUrl(),
            s ->
                assertThat(s.output())
                    .as(s.toString())
                    .contains(" 403")
                    .doesNotContain("hello from upstream")));
    rows.put(
        "a program that ignores the proxy variables gets nowhere",
        new Row(
            "no-proxy",
            "curl --noproxy '*' -sS -m 5 " + directUrl(),
            s -> {
              assertThat(s.status()).as(s.toString()).isEqualTo(REFUSED);
              assertThat(s.output()).doesNotContain("hello from upstream");
            }));
    rows.put(
        "DNS lookups fail (to the tap's host address and to the host's name servers)",
        new Row(
            "dns",
            "nslookup upstream.test \"$gw\"; r1=$?; for ns in "
                + String.join(" ", MicroVmBackend.resolvers())
                + "; do nslookup upstream.test $ns && exit 0; done; exit $r1",
            s -> {
              assertThat(s.output())
                  .as(s.toString())
                  .doesNotContain(drill.upstreamAddress())
                  .doesNotContainIgnoringCase("NXDOMAIN");
              assertThat(s.status()).isNotZero();
            }));
    rows.put(
        "the metadata address is unreachable directly",
        new Row(
            "metadata-direct",
            "curl --noproxy '*' -sS -m 5 " + metadataUrl(),
            s -> {
              assertThat(s.status()).as(s.toString()).isEqualTo(REFUSED);
              assertThat(s.output()).doesNotContain("metadata-secret");
            }));
    rows.put(
        "the metadata address is refused by the proxy",
        new Row(
            "metadata-proxy",
            "curl -sS -m 60 -i " + metadataUrl(),
            s ->
                assertThat(s.output())
                    .as(s.toString())
                    .doesNotContain("metadata-secret")
                    .contains(" 403")));
    StringBuilder everyAddress = new StringBuilder();
    for (String address : drill.hostAddresses()) {
      everyAddress
          .append("echo \"-- ")
          .append(address)
          .append("\"; curl --noproxy '*' -sS -m 4 http://")
          .append(address)
          .append(':')
          .append(hostPort)
          .append("/ && echo REACHED; ");
    }
    rows.put(
        "the host's services are unreachable on each of its addresses",
        new Row(
            "host-addresses",
            everyAddress.toString(),
            s -> {
              assertThat(s.output())
                  .as(s.toString())
                  .doesNotContain("host-service")
                  .doesNotContain("REACHED")
                  .doesNotContain("curl: (28)");
              // Each address's attempt (a "-- <address>" line before it) refused at once.
              assertThat(s.output().split("curl: \\(7\\)", -1).length - 1)
                  .as("refused connections, one per address: " + s)
                  .isEqualTo(s.output().split("(?m)^-- ", -1).length - 1)
                  .isPositive();
            }));
    rows.put(
        "the tap's host address answers on no port but the proxy's",
        new Row(
            "gateway-other-port",
            "curl --noproxy '*' -sS -m 5 http://$gw:"
                + hostPort
                + "/; r=$?; curl --noproxy '*' -sS -m 5 http://$gw:22/ && exit 0;"
                + " [ $? = $r ] || exit 99; exit $r",
            s -> {
              assertThat(s.status()).as(s.toString()).isEqualTo(REFUSED);
              assertThat(s.output()).doesNotContain("host-service");
            }));
    rows.put(
        "a second concurrent VM's workload is unreachable",
        new Row(
            "peer-workload",
            "curl --noproxy '*' -sS -m 5 http://" + b.placement().guestAddress() + ":8080/",
            s -> {
              // Refused in the fence's forward chain; a host that does not forward IPv4 drops the
              // packet in routing, before any chain sees it, and the attempt times out.
              assertThat(s.status()).as(s.toString()).isEqualTo(forwarding() ? REFUSED : 28);
              assertThat(s.output()).doesNotContain("peer-page");
            }));
    rows.put(
        "a second concurrent VM's proxy is unreachable",
        new Row(
            "peer-proxy",
            "curl -sS -m 5 -x http://"
                + b.placement().hostAddress()
                + ":"
                + backend.config().proxyPort()
                + " "
                + upstreamUrl(),
            s -> {
              assertThat(s.status()).as(s.toString()).isEqualTo(REFUSED);
              assertThat(s.output()).doesNotContain("hello from upstream");
            }));
    rows.put(
        "the command runs as nobody, with no capabilities, no new privileges, in the capped cgroup",
        new Row(
            "identity",
            "id -u; grep -E '^(CapEff|CapPrm|CapAmb|NoNewPrivs)' /proc/self/status;"
                + " cat /proc/self/cgroup",
            s ->
                assertThat(s.output())
                    .as(s.toString())
                    .contains("65534")
                    .contains("CapEff:\t0000000000000000")
                    .contains("CapPrm:\t0000000000000000")
                    .contains("NoNewPrivs:\t1")
                    .contains("0::/workload")));
    rows.put(
        "the root file system is read-only; /tmp and /workspace are writable",
        new Row(
            "filesystems",
            "touch /etc/x 2>&1; echo root=$?; touch /tmp/x; echo tmp=$?; touch /workspace/x;"
                + " echo workspace=$?",
            s ->
                assertThat(s.output())
                    .as(s.toString())
                    .contains("tmp=0")
                    .contains("workspace=0")
                    .doesNotContain("root=0")));
    rows.put(
        "the guest has no IPv6",
        new Row(
            "ipv6",
            "test -e /proc/net/if_inet6 && cat /proc/net/if_inet6; echo checked",
            s -> assertThat(s.output()).as(s.toString()).isEqualTo("checked\n")));
    rows.put(
        "control: the second VM serves on its own address and its proxy answers it (from inside)",
        new Row(
            "",
            "",
            s -> assertThat(B_OUT.output()).contains("peer-page").contains("403 Forbidden")));
    rows.put(
        "control: the upstream and the metadata listener answer on the host",
        new Row(
            "",
            "",
            s -> {
              try {
                assertThat(Host.output("curl", "-sS", "-m", "10", directUrl()))
                    .contains("hello from upstream");
                assertThat(Host.output("curl", "-sS", "-m", "10", metadataUrl()))
                    .contains("metadata-secret");
              } catch (Exception e) {
                throw new AssertionError(e);
              }
            }));
    rows.put(
        "control: the host service answers on the tap's host address, from the host",
        new Row(
            "",
            "",
            s -> {
              try {
                assertThat(
                        Host.output(
                            "curl",
                            "-sS",
                            "-m",
                            "10",
                            "http://" + a.placement().hostAddress() + ":" + hostPort + "/"))
                    .contains("host-service");
              } catch (Exception e) {
                throw new AssertionError(e);
              }
            }));
    rows.put(
        "the second VM's proxy answers its VM alone: the host itself is refused (issue 26 item 10)",
        new Row(
            "",
            "",
            s -> {
              try {
                assertThat(
                        Host.output(
                            "curl",
                            "-sS",
                            "-m",
                            "30",
                            "-i",
                            "-x",
                            "http://"
                                + b.placement().hostAddress()
                                + ":"
                                + backend.config().proxyPort(),
                            upstreamUrl()))
                    .as("a local process on the host, through the second VM's proxy")
                    .contains("Failed to connect")
                    .doesNotContain(" 403");
              } catch (Exception e) {
                throw new AssertionError(e);
              }
            }));
    rows.put(
        "the proxy's own uid reaches no private host address (nftables, beside its own rules)",
        new Row(
            "",
            "",
            s -> {
              try {
                String uid = a.placement().proxyUid();
                String local = "http://127.0.0.1:" + hostPort + "/";
                String asProxy =
                    Host.output(
                        "setpriv",
                        "--reuid",
                        uid,
                        "--regid",
                        uid,
                        "--clear-groups",
                        "curl",
                        "-sS",
                        "-m",
                        "4",
                        local);
                assertThat(asProxy).doesNotContain("host-service");
                // Control: the same request as root, and the declared internal range as the proxy.
                assertThat(Host.output("curl", "-sS", "-m", "10", local)).contains("host-service");
                assertThat(
                        Host.output(
                            "setpriv",
                            "--reuid",
                            uid,
                            "--regid",
                            uid,
                            "--clear-groups",
                            "curl",
                            "-sS",
                            "-m",
                            "10",
                            directUrl()))
                    .contains("hello from upstream");
              } catch (Exception e) {
                throw new AssertionError(e);
              }
            }));
    rows.put(
        "the proxy's decisions reach the listener",
        new Row(
            "",
            "",
            s ->
                assertThat(String.join("\n", A_OUT.decisions))
                    .contains("upstream.test")
                    .contains("denied.test")));
    rows.put(
        "the probe script ran to its end and the VM exited by itself",
        new Row(
            "",
            "",
            s -> {
              assertThat(aEnd.end()).as(aEnd.toString()).isEqualTo(Completion.End.EXIT);
              assertThat(SECTIONS).hasSizeGreaterThanOrEqualTo(15);
            }));
    return rows;
  }

  private static Map<String, Row> rows;

  @BeforeAll
  static void standUp() throws Exception {
    backend = MicroVmItSupport.requireBackend();
    drill = MicroVmItSupport.startDrill();
    b =
        (MicroVmSandbox)
            backend.launch(
                SUITE.spec(
                    SUITE.newRunId(),
                    List.of(
                        "sh",
                        "-c",
                        "echo peer-page > /tmp/index.html; httpd -p 8080 -h /tmp;"
                            + " ip=$(ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1);"
                            + " wget -Y off -q -O- http://$ip:8080/; wget -q -O- http://upstream.test/;"
                            + " exec sleep 900"),
                    noEgress(),
                    SUITE.smallCaps(),
                    Duration.ofMinutes(20)),
                B_OUT);
    RunEgress egress =
        new RunEgress(
            AllowList.parse(List.of("upstream.test:" + drill.upstreamPort())),
            Optional.empty(),
            List.of(
                dev.agentsandbox.policy.config.InternalDestination.range(
                    "upstream", drill.upstreamCidr(), drill.upstreamPort())),
            Map.of("upstream.test", List.of(drill.upstreamAddress())));
    // A's rows need B's addresses (known once B is launched) and A's own tap address, which the
    // script reads from its default route; rows judged on the host read A's placement later.
    rows = table();
    StringBuilder script = new StringBuilder("gw=$(ip route | awk '/default/ {print $3}')\n");
    for (Row row : rows.values()) {
      if (!row.key().isEmpty()) {
        script
            .append("echo '=== begin ")
            .append(row.key())
            .append("'\n(")
            .append(row.script())
            .append(") 2>&1\necho \"=== end ")
            .append(row.key())
            .append(" status $?\"\n");
      }
    }
    a =
        (MicroVmSandbox)
            backend.launch(
                SUITE.spec(
                    SUITE.newRunId(),
                    List.of("sh", "-c", script.toString()),
                    egress,
                    SUITE.smallCaps(),
                    Duration.ofMinutes(20)),
                A_OUT);
    aEnd = a.await(Instant.now().plus(Duration.ofMinutes(12)));
    Matcher m = SECTION.matcher(A_OUT.output());
    while (m.find()) {
      SECTIONS.put(m.group(1), new Section(m.group(2), Integer.parseInt(m.group(3))));
    }
  }

  @AfterAll
  static void tearDown() throws Exception {
    for (MicroVmSandbox sandbox : new MicroVmSandbox[] {a, b}) {
      if (sandbox != null) {
        sandbox.teardown();
      }
    }
    if (drill != null) {
      drill.close();
    }
    if (backend != null) {
      cleanUpAndAssertNothingLeft(backend);
    }
  }

  static Stream<Arguments> names() throws Exception {
    // The names are fixed; the rows themselves are built once the drill and the VMs exist.
    return Stream.of(
            "an allowed name works through the proxy (absolute-form HTTP)",
            "an allowed name works through the proxy (CONNECT tunnel)",
            "a name not on the list is refused by the proxy",
            "an address instead of a name is refused by the proxy",
            "a program that ignores the proxy variables gets nowhere",
            "DNS lookups fail (to the tap's host address and to the host's name servers)",
            "the metadata address is unreachable directly",
            "the metadata address is refused by the proxy",
            "the host's services are unreachable on each of its addresses",
            "the tap's host address answers on no port but the proxy's",
            "a second concurrent VM's workload is unreachable",
            "a second concurrent VM's proxy is unreachable",
            "the command runs as nobody, with no capabilities, no new privileges, in the capped cgroup",
            "the root file system is read-only; /tmp and /workspace are writable",
            "the guest has no IPv6",
            "control: the second VM serves on its own address and its proxy answers it (from inside)",
            "control: the upstream and the metadata listener answer on the host",
            "control: the host service answers on the tap's host address, from the host",
            "the second VM's proxy answers its VM alone: the host itself is refused (issue 26 item 10)",
            "the proxy's own uid reaches no private host address (nftables, beside its own rules)",
            "the proxy's decisions reach the listener",
            "the probe script ran to its end and the VM exited by itself")
        .map(Arguments::of);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("names")
  void fence(String name) {
    Row row = rows.get(name);
    assertThat(row).as("row " + name).isNotNull();
    Section section = row.key().isEmpty() ? new Section("", 0) : SECTIONS.get(row.key());
    assertThat(section)
        .as("section " + row.key() + " of A's output:\n" + A_OUT.output())
        .isNotNull();
    row.check().accept(section);
  }
}
