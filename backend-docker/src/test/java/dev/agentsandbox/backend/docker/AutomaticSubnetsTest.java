package dev.agentsandbox.backend.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import dev.agentsandbox.policy.net.Cidr;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The automatic subnet pool: its size follows the run limit, and it is taken only where nothing
 * else is, on the daemon or on this host. Each row is a situation and the range it must give.
 */
class AutomaticSubnetsTest {
  private static final Map<String, String> OURS = Map.of(Labels.MANAGED_BY, Labels.MANAGER);
  private static final Map<String, String> OTHER_PLANE =
      Map.of(Labels.MANAGED_BY, Labels.MANAGER, Labels.INSTANCE, "other");
  private static final Map<String, String> MINE =
      Map.of(Labels.MANAGED_BY, Labels.MANAGER, Labels.INSTANCE, "mine");

  static Stream<Arguments> sizes() {
    return Stream.of(
        Arguments.of("the default: 16 runs and 2 standbys fit a /21 (128 blocks)", 16, 2, 21),
        Arguments.of("16 runs without a pool fit a /22 (64 blocks, twice 32)", 16, 0, 22),
        Arguments.of("one run gets the smallest range, a /24", 1, 0, 24),
        Arguments.of("100 runs and 32 standbys need a /18", 100, 32, 18),
        Arguments.of("the largest run limit still fits the space", 1024, 32, 15));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("sizes")
  void theRangeHoldsTwiceTheBlocksOfTheRunLimit(String name, int runs, int standbys, int prefix) {
    assertThat(AutomaticSubnets.prefixFor(runs, standbys)).as(name).isEqualTo(prefix);
    long blocks = 1L << (SubnetPool.DEFAULT_BLOCK_PREFIX - prefix);
    assertThat(blocks).as(name).isGreaterThanOrEqualTo(2L * 2 * (runs + standbys));
  }

  private static AutomaticSubnets.DaemonNetwork net(String cidr, Map<String, String> labels) {
    return new AutomaticSubnets.DaemonNetwork(Cidr.parse(cidr), labels);
  }

  static Stream<Arguments> situations() {
    return Stream.of(
        Arguments.of(
            "nothing in the space: the first range", List.of(), List.of(), "10.214.0.0/21"),
        Arguments.of(
            "Docker's own bridge elsewhere changes nothing",
            List.of(net("172.17.0.0/16", Map.of())),
            List.of(Cidr.parse("172.17.0.0/16"), Cidr.parse("192.0.2.0/24")),
            "10.214.0.0/21"),
        Arguments.of(
            "a foreign network inside the first range: the next one",
            List.of(net("10.214.3.0/24", Map.of())),
            List.of(),
            "10.214.8.0/21"),
        Arguments.of(
            "another control plane's networks are its range: the next one",
            List.of(net("10.214.0.16/28", OTHER_PLANE)),
            List.of(Cidr.parse("10.214.0.16/28")),
            "10.214.8.0/21"),
        Arguments.of(
            "this backend's own networks (and their bridges' routes) are shared, block by block",
            List.of(net("10.214.0.16/28", MINE), net("10.214.0.32/28", OURS)),
            List.of(Cidr.parse("10.214.0.16/28"), Cidr.parse("10.214.0.32/28")),
            "10.214.0.0/21"),
        Arguments.of(
            "a host route into the first range (a VPN): the next one",
            List.of(),
            List.of(Cidr.parse("10.214.4.0/22")),
            "10.214.8.0/21"),
        Arguments.of(
            "a host route over all of 10.214.0.0/16: the first range beyond it",
            List.of(),
            List.of(Cidr.parse("10.214.0.0/16")),
            "10.215.0.0/21"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("situations")
  void theRangeIsOneNothingElseUses(
      String name, List<AutomaticSubnets.DaemonNetwork> daemon, List<Cidr> host, String expected) {
    SubnetPool pool = AutomaticSubnets.choose(16, 2, Optional.of("mine"), daemon, host);
    assertThat(pool.range().toString()).as(name).isEqualTo(expected);
    assertThat(pool.blockPrefix()).isEqualTo(SubnetPool.DEFAULT_BLOCK_PREFIX);
  }

  @Test
  void whenEveryRangeIsTakenTheLaunchIsRefusedNamingTheOption() {
    assertThatThrownBy(
            () ->
                AutomaticSubnets.choose(
                    16, 2, Optional.empty(), List.of(), List.of(Cidr.parse("10.0.0.0/8"))))
        .isInstanceOf(UnableToLaunchSandboxException.class)
        .hasMessageContaining("choosing a subnet pool for 16 runs in 10.214.0.0/15")
        .hasMessageContaining("10.0.0.0/8")
        .hasMessageContaining("--docker-subnet-pool CIDR");
  }

  @Test
  void withoutAnInstanceEveryNetworkOfTheProjectIsShared() {
    assertThat(AutomaticSubnets.shareable(OTHER_PLANE, Optional.empty())).isTrue();
    assertThat(AutomaticSubnets.shareable(OTHER_PLANE, Optional.of("mine"))).isFalse();
    assertThat(AutomaticSubnets.shareable(MINE, Optional.of("mine"))).isTrue();
    assertThat(AutomaticSubnets.shareable(OURS, Optional.of("mine"))).isTrue();
    assertThat(AutomaticSubnets.shareable(Map.of(), Optional.empty())).isFalse();
  }

  @Test
  void theKernelsRouteTableIsReadLittleEndianWithoutTheDefaultRoute() {
    List<String> table =
        List.of(
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT",
            "eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0",
            "docker0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0",
            "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0",
            "tun0\t0004D60A\t00000000\t0001\t0\t0\t0\t00FCFFFF\t0\t0\t0",
            "garbled line");
    assertThat(AutomaticSubnets.parseRoutes(table))
        .extracting(Cidr::toString)
        .containsExactly("172.17.0.0/16", "192.0.2.0/24", "10.214.4.0/22");
  }

  @Test
  void thisHostsOwnRoutesAndAddressesAreRead() {
    assertThat(AutomaticSubnets.hostRoutes())
        .as("loopback is left out; every address found is IPv4")
        .allMatch(c -> !c.isIpv6())
        .noneMatch(c -> c.toString().startsWith("127."));
  }
}
