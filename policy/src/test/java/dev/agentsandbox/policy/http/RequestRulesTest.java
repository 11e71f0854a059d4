package dev.agentsandbox.policy.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.policy.net.Reason;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The rule grammar, what a list of rules allows, and when one list covers a rule. */
class RequestRulesTest {
  private static final RequestRules GITHUB =
      new RequestRules(
          List.of(
              RequestRule.parse("GET,HEAD /repos/acme/widgets/**"),
              RequestRule.parse("GET /repos/*/widgets/pulls"),
              RequestRule.parse("POST /repos/acme/widgets/issues")));

  static Stream<Arguments> decisions() {
    return Stream.of(
        Arguments.of("the repository itself", "GET", "/repos/acme/widgets", null),
        Arguments.of("below the repository", "GET", "/repos/acme/widgets/contents/a.md", null),
        Arguments.of("HEAD where GET,HEAD is allowed", "HEAD", "/repos/acme/widgets/x", null),
        Arguments.of("a trailing slash is ignored", "GET", "/repos/acme/widgets/", null),
        Arguments.of("* matches one segment", "GET", "/repos/other/widgets/pulls", null),
        Arguments.of("the one POST allowed", "POST", "/repos/acme/widgets/issues", null),
        Arguments.of(
            "* matches exactly one segment, never two",
            "GET",
            "/repos/a/b/widgets/pulls",
            Reason.PATH_NOT_ALLOWED),
        Arguments.of("a sibling repository", "GET", "/repos/acme/gadgets", Reason.PATH_NOT_ALLOWED),
        Arguments.of(
            "a look-alike prefix is another segment",
            "GET",
            "/repos/acme/widgets-evil",
            Reason.PATH_NOT_ALLOWED),
        Arguments.of(
            "case matters (an upstream that ignores it only makes the rule stricter)",
            "GET",
            "/repos/ACME/widgets",
            Reason.PATH_NOT_ALLOWED),
        Arguments.of("a gist", "POST", "/gists", Reason.PATH_NOT_ALLOWED),
        Arguments.of(
            "below the one POST", "POST", "/repos/acme/widgets/issues/1", Reason.PATH_NOT_ALLOWED),
        Arguments.of(
            "DELETE is named by no rule",
            "DELETE",
            "/repos/acme/widgets",
            Reason.METHOD_NOT_ALLOWED),
        Arguments.of(
            "a method outside the closed set",
            "PROPFIND",
            "/repos/acme/widgets",
            Reason.METHOD_NOT_ALLOWED),
        Arguments.of(
            "CONNECT inside a tunnel", "CONNECT", "/repos/acme/widgets", Reason.METHOD_NOT_ALLOWED),
        Arguments.of(
            "methods are case-sensitive", "get", "/repos/acme/widgets", Reason.METHOD_NOT_ALLOWED));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("decisions")
  void decides(String name, String method, String target, Reason refusal) {
    RequestPath path = ((RequestPath.Normalised) RequestPath.parse(target)).path();
    assertThat(GITHUB.refusal(method, path.segments()))
        .as(name)
        .isEqualTo(Optional.ofNullable(refusal));
  }

  static Stream<Arguments> badRules() {
    return Stream.of(
        Arguments.of("no space", "GET/repos", "one space"),
        Arguments.of("two spaces", "GET  /repos", "one space"),
        Arguments.of("an unknown method", "FETCH /repos", "not a method"),
        Arguments.of("a lower-case method", "get /repos", "not a method"),
        Arguments.of("a method twice", "GET,GET /repos", "twice"),
        Arguments.of("an empty method", "GET, /repos", "not a method"),
        Arguments.of("a relative path", "GET repos", "starts with /"),
        Arguments.of("** in the middle", "GET /repos/**/x", "last segment"),
        Arguments.of("a partial wildcard", "GET /repos/acme*", "stand alone"),
        Arguments.of("a dot-dot segment", "GET /repos/../x", ". or .."),
        Arguments.of("an empty segment", "GET /repos//x", "empty segment"),
        Arguments.of("a trailing slash", "GET /repos/", "trailing slash"),
        Arguments.of("percent-encoding", "GET /repos/%61", "decoded"),
        Arguments.of("path parameters", "GET /repos;x", ";"),
        Arguments.of("a query", "GET /repos?x", "not allowed"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badRules")
  void refusesBadRules(String name, String rule, String message) {
    assertThatThrownBy(() -> RequestRule.parse(rule)).as(name).hasMessageContaining(message);
  }

  static Stream<Arguments> coverage() {
    return Stream.of(
        Arguments.of("the same rule", "GET /a/**", "GET /a/**", true),
        Arguments.of("a narrower path", "GET /a/**", "GET /a/b/c", true),
        Arguments.of("a narrower ** path", "GET /a/**", "GET /a/b/**", true),
        Arguments.of("** covers its own prefix", "GET /a/**", "GET /a", true),
        Arguments.of("fewer methods", "GET,HEAD /a", "HEAD /a", true),
        Arguments.of("* covers a literal", "GET /a/*/c", "GET /a/b/c", true),
        Arguments.of("a literal never covers *", "GET /a/b/c", "GET /a/*/c", false),
        Arguments.of("a wider path", "GET /a/b/**", "GET /a/**", false),
        Arguments.of("a shorter ** prefix", "GET /a/b/**", "GET /**", false),
        Arguments.of("another method", "GET /a/**", "POST /a/b", false),
        Arguments.of("* for every method", "GET /a/**", "* /a/b", false),
        Arguments.of("* covered by *", "* /a/**", "* /a/b", true),
        Arguments.of("a longer exact path", "GET /a", "GET /a/b", false),
        Arguments.of("an exact path does not cover **", "GET /a/b", "GET /a/**", false));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("coverage")
  void coversOnlyWhatItAllows(String name, String mine, String theirs, boolean covered) {
    RequestRules rules = new RequestRules(List.of(RequestRule.parse(mine)));
    assertThat(rules.covers(RequestRule.parse(theirs))).as(name).isEqualTo(covered);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("coverage")
  void coverageAgreesWithMatchingOnSamplePaths(
      String name, String mine, String theirs, boolean covered) {
    // A rule that claims to cover another must allow every sample the other allows.
    RequestRule wide = RequestRule.parse(mine);
    RequestRule narrow = RequestRule.parse(theirs);
    if (!covered) {
      return;
    }
    for (String sample : List.of("/a", "/a/b", "/a/b/c", "/a/x/c", "/a/b/c/d", "/", "/b")) {
      List<String> segments =
          ((RequestPath.Normalised) RequestPath.parse(sample)).path().segments();
      for (Method method : Method.values()) {
        if (narrow.allows(method, segments)) {
          assertThat(wide.allows(method, segments)).as(name + " " + method + " " + sample).isTrue();
        }
      }
    }
  }

  static Stream<String> roundTrips() {
    return Stream.of(
        "GET /", "GET,HEAD /repos/acme/**", "* /**", "POST /repos/*/issues", "DELETE /a/b:c/@x");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("roundTrips")
  void writesBackWhatItRead(String rule) {
    assertThat(RequestRule.parse(rule).toString()).isEqualTo(rule);
  }
}
