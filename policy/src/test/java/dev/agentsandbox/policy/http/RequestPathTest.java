package dev.agentsandbox.policy.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** How a request target is normalised on an inspected host, and what is refused as ambiguous. */
class RequestPathTest {
  static Stream<Arguments> normalised() {
    return Stream.of(
        Arguments.of(
            "a plain path stays as it is",
            "/repos/acme/widgets",
            "/repos/acme/widgets",
            "/repos/acme/widgets"),
        Arguments.of("the root", "/", "/", "/"),
        Arguments.of(
            "the query is kept as sent and never matched",
            "/search?q=a%2Fb&x=../y",
            "/search",
            "/search?q=a%2Fb&x=../y"),
        Arguments.of("an empty query is kept", "/a?", "/a", "/a?"),
        Arguments.of(
            "a dot-dot segment is removed with its parent",
            "/repos/acme/../evil",
            "/repos/evil",
            "/repos/evil"),
        Arguments.of(
            "an encoded dot-dot (%2e%2e) is a dot-dot once decoded",
            "/repos/acme/%2e%2e/evil", "/repos/evil", "/repos/evil"),
        Arguments.of(
            "a mixed-case encoded dot-dot (.%2E) too",
            "/repos/acme/.%2E/evil", "/repos/evil", "/repos/evil"),
        Arguments.of(
            "dot-dot above the root stays at the root",
            "/../../etc/passwd",
            "/etc/passwd",
            "/etc/passwd"),
        Arguments.of(
            "a single dot segment is removed", "/repos/./acme", "/repos/acme", "/repos/acme"),
        Arguments.of("repeated slashes are merged", "//repos///acme", "/repos/acme", "/repos/acme"),
        Arguments.of(
            "a trailing slash is kept when forwarding",
            "/repos/acme/",
            "/repos/acme/",
            "/repos/acme/"),
        Arguments.of(
            "a trailing dot-dot leaves a trailing slash",
            "/repos/acme/x/..",
            "/repos/acme/",
            "/repos/acme/"),
        Arguments.of(
            "an unreserved character sent encoded is sent plain",
            "/repos/%61cme",
            "/repos/acme",
            "/repos/acme"),
        Arguments.of("a space stays encoded", "/a%20b", "/a b", "/a%20b"),
        Arguments.of(
            "an encoded ? is part of the segment and stays encoded", "/a%3Fb", "/a?b", "/a%3Fb"),
        Arguments.of(
            "UTF-8 is decoded and encoded again in upper-case hex",
            "/caf%c3%a9",
            "/café",
            "/caf%C3%A9"),
        Arguments.of("dots in a name are no dot segment", "/a/.../b", "/a/.../b", "/a/.../b"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("normalised")
  void normalises(String name, String target, String path, String forwarded) {
    RequestPath.Parsed parsed = RequestPath.parse(target);
    assertThat(parsed).as(name).isInstanceOf(RequestPath.Normalised.class);
    RequestPath result = ((RequestPath.Normalised) parsed).path();
    assertThat(result.path()).as(name).isEqualTo(path);
    assertThat(result.forwarded()).as(name).isEqualTo(forwarded);
    // What is forwarded normalises to itself: the upstream reads what was matched.
    RequestPath again = ((RequestPath.Normalised) RequestPath.parse(result.forwarded())).path();
    assertThat(again).as(name + " (forwarded form is stable)").isEqualTo(result);
  }

  static Stream<Arguments> refused() {
    return Stream.of(
        Arguments.of("an encoded slash", "/repos/acme%2F..%2Fevil", "encoded slash"),
        Arguments.of("an encoded slash in lower case", "/repos/acme%2f", "encoded slash"),
        Arguments.of("an encoded backslash", "/repos/acme%5C..%5Cevil", "encoded backslash"),
        Arguments.of("a raw backslash", "/repos/acme\\..\\evil", "backslash"),
        Arguments.of(
            "an encoded percent (double encoding)", "/repos/%252e%252e/evil", "encoded percent"),
        Arguments.of("path parameters", "/repos/acme;/../evil", "path parameters"),
        Arguments.of("encoded path parameters", "/repos/acme%3B/../evil", "path parameters"),
        Arguments.of("a fragment", "/repos/acme#/../evil", "fragment"),
        Arguments.of(
            "an overlong UTF-8 dot (%c0%ae)", "/repos/acme/%c0%ae%c0%ae/evil", "not UTF-8"),
        Arguments.of("an overlong UTF-8 slash (%c0%af)", "/repos/acme%c0%afevil", "not UTF-8"),
        Arguments.of("a lone continuation byte", "/a%80", "not UTF-8"),
        Arguments.of("an encoded NUL", "/a%00b", "control"),
        Arguments.of("an encoded line break", "/a%0d%0aHost:%20evil", "control"),
        Arguments.of("a malformed escape", "/a%2", "malformed"),
        Arguments.of("a non-hex escape", "/a%zz", "malformed"),
        Arguments.of("a raw space", "/a b", "space"),
        Arguments.of("a raw non-ASCII character", "/caf\u00e9", "non-ASCII"),
        Arguments.of("asterisk-form", "*", "not a path"),
        Arguments.of(
            "absolute-form inside the tunnel", "https://evil.test/repos/acme", "not a path"),
        Arguments.of("an empty target", "", "not a path"),
        Arguments.of("a control character in the query", "/a?x=\u0001", "query"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("refused")
  void refusesWhatServersReadTwoWays(String name, String target, String detail) {
    RequestPath.Parsed parsed = RequestPath.parse(target);
    assertThat(parsed).as(name).isInstanceOf(RequestPath.Ambiguous.class);
    assertThat(((RequestPath.Ambiguous) parsed).detail()).as(name).containsIgnoringCase(detail);
  }
}
