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
        Arguments.of("IPv4 everything is absurd", "0.0.0.0/0", "wider than /8"),
        Arguments.of("IPv6 everything is absurd", "::/0", "wider than /32"),
        Arguments.of("all of IPv4 through mapped IPv6", "::ffff:0:0/96", "embeds IPv4"),
        Arguments.of("all of IPv4 through NAT64", "64:ff9b::/96", "embeds IPv4"),
        Arguments.of("all of IPv4 through 6to4", "2002::/16", "wider than /32"),
        Arguments.of("part of 6to4", "2002:a00::/32", "embeds IPv4"),
        Arguments.of("a /7 is wider than /8", "10.0.0.0/7", "wider than /8"),
        Arguments.of("this-network holds 0.0.0.0", "0.0.0.0/8", "unspecified"),
        Arguments.of("multicast is no destination", "224.0.0.0/8", "multicast"),
        Arguments.of("broadcast is no destination", "255.255.255.255/32", "broadcast"),
        Arguments.of("IPv6 multicast is no destination", "ff02::/64", "multicast"));
  }

  @ParameterizedTest(name = "{0}: {1}")
  @MethodSource
  void internalRanges(String name, String cidr, String message) {
    assertThatThrownBy(() -> InternalRanges.parse(java.util.List.of(cidr)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(message);
  }

  static Stream<Arguments> acceptedInternalRanges() {
    return Stream.of(
        Arguments.of("one loopback /32 for a test gateway", "127.0.0.2/32"),
        Arguments.of("a /8 private network", "10.0.0.0/8"),
        Arguments.of("a unique-local /48", "fd12:3456:789a::/48"));
  }

  @ParameterizedTest(name = "{0}: {1}")
  @MethodSource
  void acceptedInternalRanges(String name, String cidr) {
    assertThat(InternalRanges.parse(java.util.List.of(cidr)).asStrings()).containsExactly(cidr);
  }
}
