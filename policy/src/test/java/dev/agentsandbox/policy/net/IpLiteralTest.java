package dev.agentsandbox.policy.net;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Strict address text for configuration: one spelling per address, one row per case. */
class IpLiteralTest {

  static Stream<Arguments> accepted() {
    return Stream.of(
        Arguments.of("dotted quad", "127.0.0.1", "127.0.0.1"),
        Arguments.of("zero octets", "0.0.0.0", "0.0.0.0"),
        Arguments.of("IPv6 compressed", "2001:db8::1", "2001:db8::1"),
        Arguments.of("IPv6 full form compresses", "2001:0db8:0:0:0:0:0:1", "2001:db8::1"),
        Arguments.of("IPv6 upper case lowers", "FD00:EC2::254", "fd00:ec2::254"),
        Arguments.of("IPv6 unspecified", "::", "::"),
        Arguments.of("IPv6 loopback", "::1", "::1"),
        Arguments.of("mapped IPv4 stays IPv6", "::ffff:127.0.0.1", "::ffff:7f00:1"),
        Arguments.of("eight groups", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"),
        Arguments.of("six groups and a quad", "1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304"));
  }

  @ParameterizedTest(name = "{0}: {1}")
  @MethodSource
  void accepted(String name, String text, String formatted) {
    assertThat(IpLiteral.format(IpLiteral.parseAddress(text))).isEqualTo(formatted);
  }

  static Stream<Arguments> refused() {
    return Stream.of(
        Arguments.of("short IPv4 form", "127.1"),
        Arguments.of("hex octet", "0x7f.0.0.1"),
        Arguments.of("octal leading zero", "0177.0.0.1"),
        Arguments.of("single integer", "2130706433"),
        Arguments.of("octet over 255", "256.0.0.1"),
        Arguments.of("five parts", "1.2.3.4.5"),
        Arguments.of("empty octet", "1..2.3"),
        Arguments.of("signed octet", "+1.2.3.4"),
        Arguments.of("two double colons", "1::2::3"),
        Arguments.of("nine groups", "1:2:3:4:5:6:7:8:9"),
        Arguments.of("group over four digits", "12345::1"),
        Arguments.of("zone id", "fe80::1%eth0"),
        Arguments.of("brackets", "[::1]"),
        Arguments.of("host name", "example.com"),
        Arguments.of("empty", ""));
  }

  @ParameterizedTest(name = "{0}: {1}")
  @MethodSource
  void refused(String name, String text) {
    assertThatThrownBy(() -> IpLiteral.parse(text))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not an IP address");
  }
}
