package dev.agentsandbox.policy.net;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Address classification by the IANA special-purpose registries, one row per case. */
class AddressClassifierTest {

  static Stream<Arguments> classes() {
    return Stream.of(
        row("public IPv4 is public", "93.184.215.14", AddressClass.PUBLIC),
        row("public IPv4 next to 10/8 is public", "11.0.0.1", AddressClass.PUBLIC),
        row("unspecified IPv4", "0.0.0.0", AddressClass.UNSPECIFIED),
        row("this-network 0/8", "0.1.2.3", AddressClass.THIS_NETWORK),
        row("loopback 127.0.0.1", "127.0.0.1", AddressClass.LOOPBACK),
        row("loopback anywhere in 127/8", "127.255.0.9", AddressClass.LOOPBACK),
        row("private 10/8", "10.1.2.3", AddressClass.PRIVATE),
        row("private 172.16/12 low end", "172.16.0.1", AddressClass.PRIVATE),
        row("private 172.16/12 high end", "172.31.255.255", AddressClass.PRIVATE),
        row("172.32 is outside 172.16/12", "172.32.0.1", AddressClass.PUBLIC),
        row("private 192.168/16", "192.168.1.1", AddressClass.PRIVATE),
        row("link-local 169.254/16", "169.254.1.1", AddressClass.LINK_LOCAL),
        row("AWS/GCP/Azure metadata", "169.254.169.254", AddressClass.METADATA),
        row("Alibaba metadata inside CGNAT", "100.100.100.200", AddressClass.METADATA),
        row("Oracle metadata inside 192.0.0/24", "192.0.0.192", AddressClass.METADATA),
        row("Azure WireServer in public space", "168.63.129.16", AddressClass.METADATA),
        row("CGNAT 100.64/10", "100.64.0.1", AddressClass.SHARED),
        row("CGNAT upper end", "100.127.255.254", AddressClass.SHARED),
        row("100.128 is outside CGNAT", "100.128.0.1", AddressClass.PUBLIC),
        row("IETF protocol assignments 192.0.0/24", "192.0.0.8", AddressClass.IETF_PROTOCOL),
        row("TEST-NET-1", "192.0.2.10", AddressClass.DOCUMENTATION),
        row("TEST-NET-2", "198.51.100.10", AddressClass.DOCUMENTATION),
        row("TEST-NET-3", "203.0.113.10", AddressClass.DOCUMENTATION),
        row("benchmarking 198.18/15", "198.19.1.1", AddressClass.BENCHMARKING),
        row("deprecated 6to4 relay anycast", "192.88.99.1", AddressClass.RESERVED),
        row("multicast 224/4", "239.1.1.1", AddressClass.MULTICAST),
        row("reserved 240/4", "250.1.1.1", AddressClass.RESERVED),
        row("limited broadcast", "255.255.255.255", AddressClass.BROADCAST),
        row("public IPv6", "2606:4700::1111", AddressClass.PUBLIC),
        row("unspecified IPv6", "::", AddressClass.UNSPECIFIED),
        row("loopback IPv6", "::1", AddressClass.LOOPBACK),
        row("mapped loopback is loopback", "::ffff:127.0.0.1", AddressClass.LOOPBACK),
        row("mapped private is private", "::ffff:10.0.0.1", AddressClass.PRIVATE),
        row("mapped metadata is metadata", "::ffff:169.254.169.254", AddressClass.METADATA),
        row("mapped public is public", "::ffff:93.184.215.14", AddressClass.PUBLIC),
        row("IPv4-compatible is refused", "::93.184.215.14", AddressClass.RESERVED),
        row("NAT64 of loopback is loopback", "64:ff9b::127.0.0.1", AddressClass.LOOPBACK),
        row("NAT64 of metadata is metadata", "64:ff9b::a9fe:a9fe", AddressClass.METADATA),
        row("NAT64 of public is public", "64:ff9b::93.184.215.14", AddressClass.PUBLIC),
        row("local-use NAT64 is refused", "64:ff9b:1::1.2.3.4", AddressClass.IETF_PROTOCOL),
        row("6to4 of private is private", "2002:a00:1::1", AddressClass.PRIVATE),
        row("6to4 of loopback is loopback", "2002:7f00:1::1", AddressClass.LOOPBACK),
        row("6to4 of metadata is metadata", "2002:a9fe:a9fe::1", AddressClass.METADATA),
        row("6to4 of public is public", "2002:5db8:d70e::1", AddressClass.PUBLIC),
        row(
            "Teredo is refused",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            AddressClass.IETF_PROTOCOL),
        row("IPv6 benchmarking", "2001:2::1", AddressClass.BENCHMARKING),
        row("IPv6 documentation 2001:db8", "2001:db8::1", AddressClass.DOCUMENTATION),
        row("IPv6 documentation 3fff::/20", "3fff:0fff::1", AddressClass.DOCUMENTATION),
        row("discard-only 100::/64", "100::1", AddressClass.RESERVED),
        row("SRv6 SIDs 5f00::/16", "5f00::1", AddressClass.RESERVED),
        row("unique local fc00::/7", "fd12:3456::1", AddressClass.UNIQUE_LOCAL),
        row("AWS IPv6 metadata", "fd00:ec2::254", AddressClass.METADATA),
        row("deprecated site-local", "fec0::1", AddressClass.UNIQUE_LOCAL),
        row("IPv6 link-local", "fe80::1", AddressClass.LINK_LOCAL),
        row("IPv6 multicast", "ff02::1", AddressClass.MULTICAST),
        row("outside 2000::/3 is reserved", "4000::1", AddressClass.RESERVED),
        row("low unassigned IPv6 is reserved", "1::1", AddressClass.RESERVED));
  }

  @ParameterizedTest(name = "{0}: {1}")
  @MethodSource
  void classes(String name, String address, AddressClass expected) {
    assertThat(AddressClassifier.classify(IpLiteral.parse(address))).isEqualTo(expected);
    assertThat(AddressClassifier.classify(IpLiteral.parseAddress(address))).isEqualTo(expected);
  }

  private static Arguments row(String name, String address, AddressClass expected) {
    return Arguments.of(name, address, expected);
  }
}
