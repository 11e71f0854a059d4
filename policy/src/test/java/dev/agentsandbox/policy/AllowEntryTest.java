package dev.agentsandbox.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.policy.InvalidHostException.Problem;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The allow-list grammar and matching rules, one row per case. */
class AllowEntryTest {

  static Stream<Arguments> accepted() {
    return Stream.of(
        Arguments.of("plain host", "api.vendor.com", "api.vendor.com"),
        Arguments.of("upper case is lowered", "API.Vendor.COM", "api.vendor.com"),
        Arguments.of("trailing dot is dropped", "api.vendor.com.", "api.vendor.com"),
        Arguments.of("wildcard", "*.vendor.com", "*.vendor.com"),
        Arguments.of("named port", "db.example.com:5432", "db.example.com:5432"),
        Arguments.of("wildcard with port", "*.example.com:8443", "*.example.com:8443"),
        Arguments.of("single-label name", "localhost-mirror", "localhost-mirror"),
        Arguments.of("punycode form", "xn--bcher-kva.example", "xn--bcher-kva.example"),
        Arguments.of("63-character label", "a".repeat(63) + ".com", "a".repeat(63) + ".com"),
        Arguments.of("digits inside a label", "s3.amazonaws.com", "s3.amazonaws.com"));
  }

  @ParameterizedTest(name = "{0}: {1}")
  @MethodSource
  void accepted(String name, String raw, String canonical) {
    assertThat(AllowEntry.parse(raw)).hasToString(canonical);
  }

  static Stream<Arguments> refused() {
    return Stream.of(
        Arguments.of("bare star", "*", Problem.INVALID, "a bare * is refused"),
        Arguments.of("bare star with port", "*:443", Problem.INVALID, "a bare * is refused"),
        Arguments.of("star inside", "a.*.com", Problem.INVALID, "first label"),
        Arguments.of("star glued to a label", "*vendor.com", Problem.INVALID, "first label"),
        Arguments.of("wildcard on a TLD", "*.com", Problem.INVALID, "top-level domain"),
        Arguments.of("scheme", "https://api.vendor.com", Problem.INVALID, "scheme"),
        Arguments.of("path", "api.vendor.com/v1", Problem.INVALID, "path"),
        Arguments.of("userinfo", "user@api.vendor.com", Problem.INVALID, "user information"),
        Arguments.of("percent-encoding", "api%2evendor.com", Problem.INVALID, "percent"),
        Arguments.of("backslash", "api\\vendor.com", Problem.INVALID, "backslash"),
        Arguments.of("space", "api vendor.com", Problem.INVALID, "white space"),
        Arguments.of("non-ASCII with hint", "bücher.example", Problem.INVALID, "xn--bcher-kva"),
        Arguments.of("empty", "", Problem.INVALID, "empty"),
        Arguments.of("empty label", "api..vendor.com", Problem.INVALID, "empty label"),
        Arguments.of("leading dot", ".vendor.com", Problem.INVALID, "empty label"),
        Arguments.of("64-character label", "a".repeat(64) + ".com", Problem.INVALID, "63"),
        Arguments.of(
            "254-character name",
            ("a".repeat(49) + ".").repeat(5) + "abcd",
            Problem.INVALID,
            "253"),
        Arguments.of("underscore", "my_host.example.com", Problem.INVALID, "letters, digits"),
        Arguments.of("leading hyphen", "-api.vendor.com", Problem.INVALID, "inner hyphens"),
        Arguments.of("port zero", "api.vendor.com:0", Problem.INVALID, "1 to 65535"),
        Arguments.of("port too large", "api.vendor.com:65536", Problem.INVALID, "1 to 65535"),
        Arguments.of("signed port", "api.vendor.com:+443", Problem.INVALID, "1 to 65535"),
        Arguments.of("empty port", "api.vendor.com:", Problem.INVALID, "1 to 65535"),
        Arguments.of("dotted IPv4", "10.0.0.1", Problem.IP_LITERAL, "IP addresses"),
        Arguments.of("short IPv4", "127.1", Problem.IP_LITERAL, "IP addresses"),
        Arguments.of("hex IPv4", "0x7f.1", Problem.IP_LITERAL, "IP addresses"),
        Arguments.of("integer IPv4", "2130706433", Problem.IP_LITERAL, "IP addresses"),
        Arguments.of("octal IPv4", "0177.0.0.1", Problem.IP_LITERAL, "IP addresses"),
        Arguments.of("bracketed IPv6", "[::1]", Problem.IP_LITERAL, "IP addresses"),
        Arguments.of("bare IPv6", "::ffff:127.0.0.1", Problem.IP_LITERAL, "IP addresses"),
        Arguments.of("mapped IPv6", "[::ffff:127.0.0.1]:443", Problem.IP_LITERAL, "IP addresses"),
        Arguments.of("IPv4 with port", "169.254.169.254:80", Problem.IP_LITERAL, "IP addresses"),
        Arguments.of("numeric last label", "evil.1", Problem.IP_LITERAL, "IP addresses"),
        Arguments.of("brackets round a name", "[api.vendor.com]", Problem.INVALID, "brackets"));
  }

  @ParameterizedTest(name = "{0}: {1}")
  @MethodSource
  void refused(String name, String raw, Problem problem, String messagePart) {
    assertThatThrownBy(() -> AllowEntry.parse(raw))
        .isInstanceOfSatisfying(
            InvalidHostException.class, e -> assertThat(e.problem()).isEqualTo(problem))
        .hasMessageContaining(messagePart);
  }

  static Stream<Arguments> matching() {
    return Stream.of(
        Arguments.of("exact host on 443", "api.vendor.com", "api.vendor.com", 443, true),
        Arguments.of("exact host on 80", "api.vendor.com", "api.vendor.com", 80, true),
        Arguments.of("exact host, other port", "api.vendor.com", "api.vendor.com", 8080, false),
        Arguments.of("exact is not a suffix", "vendor.com", "api.vendor.com", 443, false),
        Arguments.of("wildcard, one level", "*.vendor.com", "api.vendor.com", 443, true),
        Arguments.of("wildcard, any depth", "*.vendor.com", "a.b.vendor.com", 443, true),
        Arguments.of("wildcard excludes apex", "*.vendor.com", "vendor.com", 443, false),
        Arguments.of("wildcard on label boundary", "*.vendor.com", "evilvendor.com", 443, false),
        Arguments.of("wildcard is not a prefix", "*.vendor.com", "vendor.com.evil.net", 443, false),
        Arguments.of("named port only", "db.example.com:5432", "db.example.com", 5432, true),
        Arguments.of("named port drops 443", "db.example.com:5432", "db.example.com", 443, false),
        Arguments.of("wildcard named port", "*.example.com:8443", "x.example.com", 8443, true),
        Arguments.of(
            "wildcard named port drops 80", "*.example.com:8443", "x.example.com", 80, false));
  }

  @ParameterizedTest(name = "{0}: {1} vs {2}:{3}")
  @MethodSource
  void matching(String name, String entry, String host, int port, boolean expected) {
    assertThat(AllowEntry.parse(entry).matches(host, port)).isEqualTo(expected);
  }

  static Stream<Arguments> within() {
    return Stream.of(
        Arguments.of("same entry", "a.example.com", "a.example.com", true),
        Arguments.of("exact within wildcard", "a.example.com", "*.example.com", true),
        Arguments.of("deeper wildcard within wildcard", "*.a.example.com", "*.example.com", true),
        Arguments.of("wildcard not within exact", "*.example.com", "a.example.com", false),
        Arguments.of("apex not within wildcard", "example.com", "*.example.com", false),
        Arguments.of("named 443 within default", "a.example.com:443", "a.example.com", true),
        Arguments.of("default not within named 443", "a.example.com", "a.example.com:443", false),
        Arguments.of("named port not within default", "a.example.com:22", "a.example.com", false),
        Arguments.of("sibling not within", "b.example.com", "a.example.com", false));
  }

  @ParameterizedTest(name = "{0}: {1} within {2}")
  @MethodSource
  void within(String name, String inner, String outer, boolean expected) {
    assertThat(AllowEntry.parse(inner).within(AllowEntry.parse(outer))).isEqualTo(expected);
  }

  static Stream<Arguments> intersect() {
    return Stream.of(
        Arguments.of("equal", "a.example.com", "a.example.com", "a.example.com"),
        Arguments.of("exact inside wildcard", "a.example.com", "*.example.com", "a.example.com"),
        Arguments.of("wildcard narrowed", "*.example.com", "*.a.example.com", "*.a.example.com"),
        Arguments.of("disjoint names", "a.example.com", "b.example.com", ""),
        Arguments.of("apex and wildcard", "example.com", "*.example.com", ""),
        Arguments.of("default and 443", "a.example.com", "a.example.com:443", "a.example.com:443"),
        Arguments.of("default and 5432", "a.example.com", "a.example.com:5432", ""),
        Arguments.of("same named port", "*.example.com:22", "a.example.com:22", "a.example.com:22"),
        Arguments.of("different named ports", "a.example.com:22", "a.example.com:23", ""));
  }

  @ParameterizedTest(name = "{0}: {1} and {2}")
  @MethodSource
  void intersect(String name, String left, String right, String expected) {
    String actual =
        AllowEntry.parse(left).intersect(AllowEntry.parse(right)).map(Object::toString).orElse("");
    String reversed =
        AllowEntry.parse(right).intersect(AllowEntry.parse(left)).map(Object::toString).orElse("");
    assertThat(actual).isEqualTo(expected);
    assertThat(reversed).isEqualTo(expected);
  }
}
