package dev.agentsandbox.policy.net;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** CIDR parsing, containment and the width rules for internal ranges, one row per case. */
class CidrTest {

  static Stream<Arguments> containment() {
    return Stream.of(
        Arguments.of("/32 holds its address", "127.0.0.2/32", "127.0.0.2", true),
        Arguments.of("/32 holds nothing else", "127.0.0.2/32", "127.0.0.3", false),
        Arguments.of("bare address is a /32", "10.9.8.7", "10.9.8.7", true),
        Arguments.of("/12 holds its last address", "172.16.0.0/12", "172.31.255.255", true),
        Arguments.of("/12 stops at the boundary", "172.16.0.0/12", "172.32.0.0", false),
        Arguments.of("/0 holds everything", "0.0.0.0/0", "8.8.8.8", true),
        Arguments.of("IPv6 /48", "fd12:3456:789a::/48", "fd12:3456:789a:1::5", true),
        Arguments.of("IPv6 /48 boundary", "fd12:3456:789a::/48", "fd12:3456:789b::1", false),
        Arguments.of("families never mix", "0.0.0.0/0", "::1", false));
  }

  @ParameterizedTest(name = "{0}: {1} holds {2} = {3}")
  @MethodSource
  void containment(String name, String cidr, String address, boolean inside) {
    assertThat(Cidr.parse(cidr).contains(IpLiteral.parseAddress(address))).isEqualTo(inside);
  }

  static Stream<Arguments> badCidrs() {
    return Stream.of(
        Arguments.of("host bits set", "10.0.0.1/8", "host bits"),
        Arguments.of("prefix over 32", "10.0.0.0/33", "out of range"),
        Arguments.of("prefix over 128", "::/129", "out of range"),
        Arguments.of("signed prefix", "10.0.0.0/+8", "not a number"),
        Arguments.of("empty prefix", "10.0.0.0/", "not a number"),
        Arguments.of("host name", "gateway.internal/32", "not an IP address"),
        Arguments.of("short IPv4 spelling", "10.1/16", "not an IP address"),
        Arguments.of("empty", "", "empty"));
  }

  @ParameterizedTest(name = "{0}: {1}")
  @MethodSource
  void badCidrs(String name, String cidr, String message) {
    assertThatThrownBy(() -> Cidr.parse(cidr))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(message);
  }

  static Stream<Arguments> internalRanges() {
    return Stream.of(
        Arguments.of("IPv4 everything is absurd", "0.0.0.0/0:443", "wider than /16"),
        Arguments.of("IPv6 everything is absurd", "::/0:443", "wider than /48"),
        Arguments.of(
            "a /8 private network is not a destination", "10.0.0.0/8:443", "wider than /16"),
        Arguments.of("a /15 is one bit too wide", "10.0.0.0/15:443", "wider than /16"),
        Arguments.of("all of IPv4 through mapped IPv6", "::ffff:0:0/96:443", "embeds IPv4"),
        Arguments.of("a private /16 through mapped IPv6", "::ffff:10.0.0.0/112:443", "embeds IPv4"),
        Arguments.of("all of IPv4 through NAT64", "64:ff9b::/96:443", "embeds IPv4"),
        Arguments.of("part of 6to4", "2002:a00::/48:443", "embeds IPv4"),
        Arguments.of("the metadata address itself", "169.254.169.254/32:80", "metadata address"),
        Arguments.of("a range holding the metadata address", "169.254.169.0/24:80", "metadata"),
        Arguments.of(
            "link-local without the metadata address", "169.254.170.0/24:80", "link-local"),
        Arguments.of("AWS's IPv6 metadata address", "fd00:ec2::254/128:80", "metadata address"),
        Arguments.of("a ULA /64 holding it", "fd00:ec2::/64:80", "metadata address"),
        Arguments.of("Alibaba's metadata in CGNAT", "100.100.100.0/24:80", "metadata address"),
        Arguments.of("Azure's WireServer", "168.63.0.0/16:80", "metadata address"),
        Arguments.of("IPv6 link-local", "fe80::/64:80", "link-local"),
        Arguments.of("this-network holds 0.0.0.0", "0.0.0.0/16:80", "unspecified"),
        Arguments.of("multicast is no destination", "224.0.0.0/16:80", "multicast"),
        Arguments.of("broadcast is no destination", "255.255.255.255/32:80", "broadcast"),
        Arguments.of("broadcast inside a reserved /16", "255.255.0.0/16:80", "broadcast"),
        Arguments.of("IPv6 multicast is no destination", "ff02::/64:80", "multicast"),
        Arguments.of("no port: open on every port is gone", "10.20.1.0/24", "needs its ports"),
        Arguments.of("port 0", "10.20.1.0/24:0", "not a port"),
        Arguments.of("port 65536", "10.20.1.0/24:65536", "not a port"),
        Arguments.of("a negative port", "10.20.1.0/24:-1", "not a port"),
        Arguments.of("an empty port", "10.20.1.0/24:443,", "not a port"),
        Arguments.of("a port range is not a port", "10.20.1.0/24:1-65535", "not a port"),
        Arguments.of("host bits set", "10.20.1.1/24:443", "host bits"),
        Arguments.of(
            "more than 16 ports",
            "10.20.1.0/24:1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17",
            "more than 16 ports"));
  }

  @ParameterizedTest(name = "{0}: {1}")
  @MethodSource
  void internalRanges(String name, String rule, String message) {
    assertThatThrownBy(() -> InternalRanges.parse(java.util.List.of(rule)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(message);
  }

  static Stream<Arguments> acceptedInternalRanges() {
    return Stream.of(
        Arguments.of("one loopback /32 for a test gateway", "127.0.0.2/32:443"),
        Arguments.of("a /16 private network, the widest", "10.20.0.0/16:443,8443"),
        Arguments.of("a unique-local /48", "fd12:3456:789a::/48:443"),
        Arguments.of("a link-local neighbour's range is not link-local", "169.253.0.0/16:80"));
  }

  @ParameterizedTest(name = "{0}: {1}")
  @MethodSource
  void acceptedInternalRanges(String name, String rule) {
    assertThat(InternalRanges.parse(java.util.List.of(rule)).asStrings()).containsExactly(rule);
  }
}
