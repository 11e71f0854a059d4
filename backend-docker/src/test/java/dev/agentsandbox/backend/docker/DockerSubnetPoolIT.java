package dev.agentsandbox.backend.docker;

import static dev.agentsandbox.backend.docker.DockerItSupport.SUITE;
import static dev.agentsandbox.backend.docker.DockerItSupport.cleanUpAndAssertNothingLeft;
import static dev.agentsandbox.backend.docker.DockerItSupport.labelledResources;
import static dev.agentsandbox.testing.ItRuns.noEgress;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.model.Network;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import dev.agentsandbox.policy.net.Cidr;
import dev.agentsandbox.testing.RecordingListener;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Runs' networks take their subnets from the operator's pool on a real daemon: both networks get a
 * /28 of the range, never one a network already there holds, the proxy still refuses the pool's
 * private addresses, the blocks come back when the run is gone, and an exhausted pool refuses a run
 * at once.
 */
class DockerSubnetPoolIT {
  /** Ranges of their own, apart from Docker's default pools and from other tests. */
  private static final String RANGE = "10.213.240.0/24";

  private static final String TINY = "10.213.241.0/27";
  private static final String FOREIGN = "asb-subnetpool-it-foreign";

  private static DockerClient client;

  @BeforeAll
  static void daemon() {
    client = DockerItSupport.requireDaemon();
  }

  static List<String> runtimes() {
    return DockerItSupport.runtimes();
  }

  @AfterEach
  void nothingLeft() {
    removeForeign();
    cleanUpAndAssertNothingLeft(client);
  }

  private static void removeForeign() {
    try {
      client.removeNetworkCmd(FOREIGN).exec();
    } catch (RuntimeException e) {
      if (!DockerErrors.alreadyDone(e)) {
        throw e;
      }
    }
  }

  private static DockerBackend backend(String range) {
    return new DockerBackend(
        client,
        DockerBackendConfig.defaults().toBuilder().subnetPool(SubnetPool.parse(range)).build());
  }

  private static Network.Ipam.Config ipam(String name) {
    List<Network.Ipam.Config> configs =
        client.inspectNetworkCmd().withNetworkId(name).exec().getIpam().getConfig();
    assertThat(configs).as(name).hasSize(1);
    return configs.get(0);
  }

  @ParameterizedTest(name = "under {0}")
  @MethodSource("runtimes")
  void bothNetworksTakeAFreeBlockOfThePoolAndTheProxyStillRefusesIt(String runtime)
      throws Exception {
    // A network the allocator did not create holds the range's first block, as one left by a
    // control plane that crashed would.
    removeForeign();
    client
        .createNetworkCmd()
        .withName(FOREIGN)
        .withDriver("bridge")
        .withIpam(
            new Network.Ipam().withConfig(new Network.Ipam.Config().withSubnet("10.213.240.0/28")))
        .exec();
    DockerBackend backend = backend(RANGE);
    String runId = SUITE.newRunId();
    RunLayout layout =
        new RunLayout(
            SUITE.spec(
                runId, List.of("true"), noEgress(), SUITE.smallCaps(), Duration.ofMinutes(2)),
            DockerBackendConfig.defaults(),
            runtime);
    // The workload asks its proxy for the egress bridge's gateway (a private address of the pool),
    // then tries it without the proxy: both must fail.
    String script =
        "gw=$(cat /tmp/gw 2>/dev/null); i=0; while [ -z \"$gw\" ] && [ $i -lt 300 ]; do sleep 0.1;"
            + " gw=$(cat /tmp/gw 2>/dev/null); i=$((i+1)); done; echo gw=$gw;"
            + " echo via-proxy=$(curl -s -m 10 -o /dev/null -w '%{http_code}' http://$gw/);"
            + " curl -s -m 5 --noproxy '*' http://$gw/ >/dev/null 2>&1; echo direct=$?";
    RecordingListener listener = new RecordingListener();
    Completion completion;
    try (Sandbox sandbox =
        backend.launch(
            SUITE.spec(
                runId,
                List.of("sh", "-c", script),
                noEgress(),
                SUITE.smallCaps(),
                Duration.ofMinutes(2)),
            listener,
            runtime)) {
      Network.Ipam.Config fence = ipam(layout.fenceName());
      Network.Ipam.Config egress = ipam(layout.egressName());
      Cidr range = Cidr.parse(RANGE);
      for (Network.Ipam.Config config : List.of(fence, egress)) {
        Cidr subnet = Cidr.parse(config.getSubnet());
        assertThat(subnet.prefixLength()).isEqualTo(28);
        assertThat(range.covers(subnet)).as(config.getSubnet()).isTrue();
        assertThat(subnet.overlaps(Cidr.parse("10.213.240.0/28")))
            .as("the foreign network's block")
            .isFalse();
      }
      assertThat(fence.getSubnet()).isNotEqualTo(egress.getSubnet());
      assertThat(backend.subnetsHeld()).isEqualTo(2);
      DockerSandbox docker = (DockerSandbox) sandbox;
      assertThat(
              Cidr.parse(fence.getSubnet())
                  .contains(java.net.InetAddress.getByName(docker.proxyAddress())))
          .isTrue();
      DockerItSupport.exec(
          client, docker.workloadContainerId(), "echo " + egress.getGateway() + " > /tmp/gw");
      completion = sandbox.await(Instant.now().plus(Duration.ofMinutes(1)));
    }
    assertThat(completion.end()).as(listener.output()).isEqualTo(Completion.End.EXIT);
    assertThat(listener.output())
        .contains("via-proxy=403")
        .doesNotContain("direct=0")
        .containsPattern("direct=[1-9]");
    assertThat(listener.decisions).anyMatch(d -> d.contains("deny"));
    assertThat(backend.subnetsHeld()).as("blocks released with the networks").isZero();
  }

  @Test
  void aBlockTheDaemonRefusesAsOverlappingIsSetAsideAndTheNextFreeOneTaken() throws Exception {
    // Another control plane's network appears between this allocator's look at the daemon and the
    // create: an allocator that sees no daemon network at all hands out the block that network
    // holds, the daemon refuses it as overlapping, and the run must land on the next free block.
    removeForeign();
    Cidr foreign = Cidr.parse("10.213.240.0/28");
    client
        .createNetworkCmd()
        .withName(FOREIGN)
        .withDriver("bridge")
        .withIpam(
            new Network.Ipam().withConfig(new Network.Ipam.Config().withSubnet("10.213.240.0/28")))
        .exec();
    SubnetPool pool = SubnetPool.parse(RANGE);
    SubnetAllocator blind = new SubnetAllocator(pool, List::of, Clock.systemUTC());
    String runId = SUITE.newRunId();
    RunSpec spec =
        SUITE.spec(
            runId, List.of("echo", "placed"), noEgress(), SUITE.smallCaps(), Duration.ofMinutes(2));
    DockerBackendConfig config =
        DockerBackendConfig.defaults().toBuilder().subnetPool(pool).build();
    RunLayout layout = new RunLayout(spec, config, "runc");
    RecordingListener listener = new RecordingListener();
    Completion completion;
    try (DockerSandbox sandbox =
        DockerItSupport.launcher(client, config, blind)
            .cold(layout, spec, listener, Instant.now().plus(Duration.ofMinutes(2)))) {
      for (String name : List.of(layout.fenceName(), layout.egressName())) {
        Cidr subnet = Cidr.parse(ipam(name).getSubnet());
        assertThat(Cidr.parse(RANGE).covers(subnet)).as(name).isTrue();
        assertThat(subnet.overlaps(foreign)).as(name + " avoids the foreign block").isFalse();
      }
      completion = sandbox.await(Instant.now().plus(Duration.ofMinutes(1)));
    }
    assertThat(completion.end()).as(listener.output()).isEqualTo(Completion.End.EXIT);
    assertThat(listener.output()).contains("placed");
    assertThat(blind.held()).as("blocks released with the networks").isZero();
  }

  @Test
  void anExhaustedPoolRefusesTheRunAtOnceAndCreatesNothingForIt() throws Exception {
    DockerBackend backend = backend(TINY); // two /28 blocks: one run
    String first = SUITE.newRunId();
    String second = SUITE.newRunId();
    try (Sandbox holding =
        backend.launch(
            SUITE.spec(
                first,
                List.of("sleep", "60"),
                noEgress(),
                SUITE.smallCaps(),
                Duration.ofMinutes(2)),
            new RecordingListener(),
            "runc")) {
      long started = System.nanoTime();
      assertThatThrownBy(
              () ->
                  backend.launch(
                      SUITE.spec(
                          second,
                          List.of("true"),
                          noEgress(),
                          SUITE.smallCaps(),
                          Duration.ofMinutes(2)),
                      new RecordingListener(),
                      "runc"))
          .isInstanceOf(UnableToLaunchSandboxException.class)
          .hasMessageContaining("run " + second)
          .hasMessageContaining("subnet pool " + TINY + " has no 2 free /28 blocks")
          .hasMessageContaining("2 held by live runs");
      assertThat(labelledResources(client)).noneMatch(r -> r.contains(second));
      holding.kill();
      holding.await(Instant.now().plus(Duration.ofSeconds(30)));
    }
    assertThat(backend.subnetsHeld()).isZero();
    String third = SUITE.newRunId();
    RecordingListener listener = new RecordingListener();
    try (Sandbox sandbox =
        backend.launch(
            SUITE.spec(
                third,
                List.of("echo", "third"),
                noEgress(),
                SUITE.smallCaps(),
                Duration.ofMinutes(2)),
            listener,
            "runc")) {
      assertThat(sandbox.await(Instant.now().plus(Duration.ofMinutes(1))).end())
          .isEqualTo(Completion.End.EXIT);
    }
    assertThat(listener.output()).contains("third");
  }
}
