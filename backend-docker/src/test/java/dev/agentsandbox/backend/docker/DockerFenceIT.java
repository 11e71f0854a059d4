package dev.agentsandbox.backend.docker;

import static dev.agentsandbox.backend.docker.DockerItSupport.SUITE;
import static dev.agentsandbox.backend.docker.DockerItSupport.cleanUpAndAssertNothingLeft;
import static dev.agentsandbox.backend.docker.DockerItSupport.exec;
import static dev.agentsandbox.testing.ItRuns.noEgress;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.docker.DockerItSupport.ExecResult;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.RunEgress;
import dev.agentsandbox.testing.Host;
import dev.agentsandbox.testing.HostDrill;
import dev.agentsandbox.testing.RecordingListener;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The fence, tried from inside running sandboxes: for each runtime the daemon has, two concurrent
 * sandboxes A and B; every row runs a command in one of them and says what it proves. Rows named
 * "control" show that what the other rows fail to reach is really there.
 */
class DockerFenceIT {
  private static DockerClient client;
  private static HostDrill drill;
  private static final Map<String, Pair> PAIRS = new HashMap<>();

  /** Sandbox A (probes run here) and B (a peer serving HTTP on 8080) under one runtime. */
  record Pair(
      DockerSandbox a, DockerSandbox b, RecordingListener aListener, String egressGateway) {}

  @BeforeAll
  static void standUp() throws Exception {
    client = DockerItSupport.requireDaemon();
    assumeTrue(Host.canAddLinks(), "the fence drill adds dummy interfaces: needs root and ip");
    drill = DockerItSupport.startDrill();
    int upstreamPort = drill.upstreamPort();
    DockerBackend backend = new DockerBackend(client, DockerBackendConfig.defaults());
    RunEgress egress =
        new RunEgress(
            AllowList.parse(List.of("upstream.test:" + upstreamPort)),
            Optional.empty(),
            List.of(
                dev.agentsandbox.policy.config.InternalDestination.range(
                    "upstream", drill.upstreamCidr(), upstreamPort)),
            Map.of("upstream.test", List.of(drill.upstreamAddress())));
    for (String runtime : DockerItSupport.runtimes()) {
      RecordingListener aListener = new RecordingListener();
      DockerSandbox a =
          (DockerSandbox)
              backend.launch(
                  SUITE.spec(
                      SUITE.newRunId(),
                      List.of("sleep", "900"),
                      egress,
                      SUITE.smallCaps(),
                      Duration.ofMinutes(15)),
                  aListener,
                  runtime);
      DockerSandbox b =
          (DockerSandbox)
              backend.launch(
                  SUITE.spec(
                      SUITE.newRunId(),
                      List.of(
                          "sh", "-c", "echo peer > /tmp/index.html; exec httpd -f -p 8080 -h /tmp"),
                      noEgress(),
                      SUITE.smallCaps(),
                      Duration.ofMinutes(15)),
                  dev.agentsandbox.backend.SandboxListener.NONE,
                  runtime);
      String gateway =
          client
              .inspectNetworkCmd()
              .withNetworkId("asb-" + a.runId() + "-egress")
              .exec()
              .getIpam()
              .getConfig()
              .get(0)
              .getGateway();
      PAIRS.put(runtime, new Pair(a, b, aListener, gateway));
    }
  }

  @AfterAll
  static void tearDown() throws Exception {
    for (Pair pair : PAIRS.values()) {
      pair.a().teardown();
      pair.b().teardown();
    }
    if (drill != null) {
      drill.close();
    }
    if (client != null) {
      cleanUpAndAssertNothingLeft(client);
    }
  }

  /** One check: run {@code script} in a container of the pair and judge the result. */
  interface Check {
    void run(Pair pair) throws Exception;
  }

  static String ipOn(String containerId, String network) {
    return client
        .inspectContainerCmd(containerId)
        .exec()
        .getNetworkSettings()
        .getNetworks()
        .get(network)
        .getIpAddress();
  }

  static ExecResult inA(Pair pair, String script) throws InterruptedException {
    return exec(client, pair.a().workloadContainerId(), script);
  }

  static Stream<Arguments> rows() throws Exception {
    List<Arguments> rows = new ArrayList<>();
    for (String runtime : DockerItSupport.runtimes()) {
      for (Map.Entry<String, Check> check : checks().entrySet()) {
        rows.add(Arguments.of(check.getKey(), runtime, check.getValue()));
      }
    }
    return rows.stream();
  }

  private static Map<String, Check> checks() throws Exception {
    Map<String, Check> checks = new java.util.LinkedHashMap<>();
    checks.put(
        "an allowed name works through the proxy (absolute-form HTTP)",
        pair -> {
          ExecResult r = inA(pair, "curl -sS -m 20 http://upstream.test:" + upstreamPort() + "/");
          assertThat(r.output()).as(r.toString()).contains("hello from upstream");
        });
    checks.put(
        "an allowed name works through the proxy (CONNECT tunnel)",
        pair -> {
          ExecResult r =
              inA(pair, "curl -sS -m 20 -p http://upstream.test:" + upstreamPort() + "/");
          assertThat(r.output()).as(r.toString()).contains("hello from upstream");
        });
    checks.put(
        "a name not on the list is refused by the proxy",
        pair -> {
          ExecResult r = inA(pair, "curl -sS -m 20 -i http://denied.test:" + upstreamPort() + "/");
          assertThat(r.output())
              .as(r.toString())
              .contains(" 403")
              .containsIgnoringCase("X-Agent-Sandbox-Denied")
              .doesNotContain("hello from upstream");
        });
    checks.put(
        "an address instead of a name is refused by the proxy",
        pair -> {
          ExecResult r =
              inA(
                  pair,
                  "curl -sS -m 20 -i http://"
                      + drill.upstreamAddress()
                      + ":"
                      + upstreamPort()
                      + "/");
          assertThat(r.output())
              .as(r.toString())
              .contains(" 403")
              .doesNotContain("hello from upstream");
        });
    checks.put(
        "a program that ignores the proxy variables gets nowhere",
        pair -> {
          ExecResult r =
              inA(
                  pair,
                  "curl --noproxy '*' -sS -m 5 http://"
                      + drill.upstreamAddress()
                      + ":"
                      + upstreamPort()
                      + "/");
          assertThat(r.exitCode()).as(r.toString()).isNotZero();
          assertThat(r.output()).doesNotContain("hello from upstream");
        });
    checks.put(
        "control: the upstream answers on the proxy's side of the fence",
        pair -> {
          ExecResult r =
              exec(
                  client,
                  pair.a().proxyContainerId(),
                  "timeout 10 wget -q -O- http://"
                      + drill.upstreamAddress()
                      + ":"
                      + upstreamPort()
                      + "/");
          assertThat(r.output()).as(r.toString()).contains("hello from upstream");
        });
    checks.put(
        "DNS lookups fail",
        pair -> {
          ExecResult r = inA(pair, "nslookup upstream.test");
          assertThat(r.output())
              .as(r.toString())
              .doesNotContain(drill.upstreamAddress())
              .doesNotContainIgnoringCase("NXDOMAIN");
          assertThat(r.exitCode()).isNotZero();
        });
    checks.put(
        "the metadata address is unreachable directly",
        pair -> {
          ExecResult r =
              inA(
                  pair,
                  "curl --noproxy '*' -sS -m 5 http://"
                      + HostDrill.METADATA_ADDRESS
                      + ":"
                      + metadataPort()
                      + "/");
          assertThat(r.exitCode()).as(r.toString()).isNotZero();
          assertThat(r.output()).doesNotContain("metadata-secret");
        });
    checks.put(
        "the metadata address is refused by the proxy",
        pair -> {
          ExecResult r =
              inA(
                  pair,
                  "curl -sS -m 20 -i http://"
                      + HostDrill.METADATA_ADDRESS
                      + ":"
                      + metadataPort()
                      + "/");
          assertThat(r.output())
              .as(r.toString())
              .doesNotContain("metadata-secret")
              .contains(" 403");
        });
    checks.put(
        "control: the metadata listener answers on the proxy's side of the fence",
        pair -> {
          ExecResult r =
              exec(
                  client,
                  pair.a().proxyContainerId(),
                  "timeout 10 wget -q -O- http://"
                      + HostDrill.METADATA_ADDRESS
                      + ":"
                      + metadataPort()
                      + "/");
          assertThat(r.output()).as(r.toString()).contains("metadata-secret");
        });
    checks.put(
        "the host's services are unreachable on each of its addresses and the egress gateway",
        pair -> {
          List<String> targets = new ArrayList<>(drill.hostAddresses());
          targets.add(pair.egressGateway());
          for (String address : targets) {
            ExecResult r =
                inA(pair, "curl --noproxy '*' -sS -m 3 http://" + address + ":" + hostPort() + "/");
            assertThat(r.exitCode()).as(address + ": " + r).isNotZero();
            assertThat(r.output()).as(address).doesNotContain("host-service");
          }
        });
    checks.put(
        "the host's IPv6 link-local address on the private bridge is unreachable",
        pair -> {
          String fenceId =
              client
                  .inspectNetworkCmd()
                  .withNetworkId("asb-" + pair.a().runId() + "-fence")
                  .exec()
                  .getId();
          String bridge = "br-" + fenceId.substring(0, 12);
          java.util.Optional<String> found = Host.linkLocalOn(bridge);
          // A host without IPv6 has no such address, and so no such way in.
          assumeTrue(found.isPresent(), "the host has no IPv6 link-local address on " + bridge);
          String linkLocal = found.get();
          String url = "http://[" + linkLocal + "%25eth0]:" + hostPort() + "/";
          ExecResult r = inA(pair, "curl -g --noproxy '*' -sS -m 3 '" + url + "'");
          assertThat(r.exitCode()).as(r.toString()).isNotZero();
          assertThat(r.output()).doesNotContain("host-service");
          // Control: from the host the same address and port answer.
          assertThat(
                  Host.output(
                      "curl",
                      "-g",
                      "-sS",
                      "-m",
                      "5",
                      "http://[" + linkLocal + "%25" + bridge + "]:" + hostPort() + "/"))
              .contains("host-service");
        });
    checks.put(
        "control: the host service answers on the proxy's side of the fence",
        pair -> {
          ExecResult r =
              exec(
                  client,
                  pair.a().proxyContainerId(),
                  "timeout 10 wget -q -O- http://" + pair.egressGateway() + ":" + hostPort() + "/");
          assertThat(r.output()).as(r.toString()).contains("host-service");
        });
    checks.put(
        "a second concurrent sandbox's workload is unreachable",
        pair -> {
          String peer = ipOn(pair.b().workloadContainerId(), "asb-" + pair.b().runId() + "-fence");
          ExecResult r = inA(pair, "curl --noproxy '*' -sS -m 5 http://" + peer + ":8080/");
          assertThat(r.exitCode()).as(r.toString()).isNotZero();
          assertThat(r.output()).doesNotContain("peer");
        });
    checks.put(
        "a second concurrent sandbox's proxy is unreachable",
        pair -> {
          String peerProxy =
              ipOn(pair.b().proxyContainerId(), "asb-" + pair.b().runId() + "-fence");
          ExecResult r =
              inA(
                  pair,
                  "curl -sS -m 5 -x http://"
                      + peerProxy
                      + ":3128 http://upstream.test:"
                      + upstreamPort()
                      + "/");
          assertThat(r.exitCode()).as(r.toString()).isNotZero();
          assertThat(r.output()).doesNotContain("hello from upstream");
        });
    checks.put(
        "control: the second sandbox's workload answers inside its own fence",
        pair -> {
          String peer = ipOn(pair.b().workloadContainerId(), "asb-" + pair.b().runId() + "-fence");
          ExecResult r =
              exec(
                  client,
                  pair.b().proxyContainerId(),
                  "timeout 10 wget -q -O- http://" + peer + ":8080/");
          assertThat(r.output()).as(r.toString()).contains("peer");
        });
    checks.put(
        "the workload runs as nobody without capabilities or new privileges",
        pair -> {
          ExecResult r =
              inA(pair, "id -u; grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status");
          assertThat(r.output())
              .as(r.toString())
              .startsWith("65534")
              .containsPattern("CapEff:\\s+0000000000000000")
              .containsPattern("CapBnd:\\s+0000000000000000");
        });
    checks.put(
        "the root filesystem is read-only and only /tmp is writable",
        pair -> {
          ExecResult r = inA(pair, "touch /etc/x 2>&1; echo root=$?; touch /tmp/x; echo tmp=$?");
          assertThat(r.output()).as(r.toString()).contains("tmp=0").doesNotContain("root=0");
        });
    checks.put(
        "no Docker socket and no host mount is visible",
        pair -> {
          ExecResult r =
              inA(pair, "ls -l /var/run/docker.sock /run/docker.sock 2>&1; cat /proc/mounts");
          assertThat(r.output())
              .as(r.toString())
              .doesNotContain("docker.sock ")
              .doesNotContain("/var/lib/docker/volumes");
        });
    checks.put(
        "the proxy's decisions reach the listener",
        pair -> {
          assertThat(String.join("\n", pair.aListener().decisions))
              .contains("upstream.test")
              .contains("denied.test");
        });
    return checks;
  }

  private static int upstreamPort() {
    return drill.upstreamPort();
  }

  private static int metadataPort() {
    return drill.metadataPort();
  }

  private static int hostPort() {
    return drill.hostPort();
  }

  @ParameterizedTest(name = "{0} (under {1})")
  @MethodSource("rows")
  void fence(String name, String runtime, Check check) throws Exception {
    check.run(PAIRS.get(runtime));
  }
}
