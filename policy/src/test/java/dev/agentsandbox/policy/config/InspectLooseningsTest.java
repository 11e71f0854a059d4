package dev.agentsandbox.policy.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.policy.config.Loosening.Kind;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Which changes to an agent's inspected hosts loosen: whatever lets more through needs {@code
 * governance.weaken}; a narrower rule does not.
 */
class InspectLooseningsTest {
  private static final Map<String, Object> GITHUB_TOKEN =
      Map.of("source", "command", "command", "github-app-token");

  /** One agent allowed api.github.com (and more), with a github credential and {@code inspect}. */
  private static Map<String, Object> doc(List<String> allow, Map<String, Object> inspect) {
    Map<String, Object> agent = new LinkedHashMap<>();
    agent.put("allow", allow);
    agent.put("credentials", Map.of("github", GITHUB_TOKEN, "other", GITHUB_TOKEN));
    agent.put("inspect", inspect);
    return Map.of("enabled", true, "agents", Map.of("helper", agent));
  }

  private static Map<String, Object> doc(Map<String, Object> inspect) {
    return doc(List.of("api.github.com", "uploads.github.com"), inspect);
  }

  private static Map<String, Object> rules(String... rules) {
    return Map.of("rules", List.of(rules));
  }

  private static Map<String, Object> inject(String credential, String... rules) {
    Map<String, Object> entry = new LinkedHashMap<>();
    entry.put("credential", credential);
    if (rules.length > 0) {
      entry.put("rules", List.of(rules));
    }
    return entry;
  }

  static Stream<Arguments> changes() {
    return Stream.of(
        Arguments.of(
            "inspecting a host with rules only narrows it",
            doc(Map.of()),
            doc(Map.of("api.github.com", rules("GET /repos/acme/**"))),
            List.of()),
        Arguments.of(
            "inspecting a host without rules lets nothing more through",
            doc(Map.of()),
            doc(Map.of("api.github.com", Map.of())),
            List.of()),
        Arguments.of(
            "a narrower rule is a tightening",
            doc(Map.of("api.github.com", rules("GET,HEAD /repos/acme/**"))),
            doc(Map.of("api.github.com", rules("GET /repos/acme/widgets/**"))),
            List.of()),
        Arguments.of(
            "a rule removed is a tightening",
            doc(Map.of("api.github.com", rules("GET /repos/acme/**", "POST /gists"))),
            doc(Map.of("api.github.com", rules("GET /repos/acme/**"))),
            List.of()),
        Arguments.of(
            "a wider path is a loosening",
            doc(Map.of("api.github.com", rules("GET /repos/acme/widgets/**"))),
            doc(Map.of("api.github.com", rules("GET /repos/acme/**"))),
            List.of(Kind.INSPECTION_RULE_WIDENED)),
        Arguments.of(
            "another method is a loosening",
            doc(Map.of("api.github.com", rules("GET /repos/acme/**"))),
            doc(Map.of("api.github.com", rules("GET,POST /repos/acme/**"))),
            List.of(Kind.INSPECTION_RULE_WIDENED)),
        Arguments.of(
            "a literal segment turned * is a loosening",
            doc(Map.of("api.github.com", rules("GET /repos/acme/widgets"))),
            doc(Map.of("api.github.com", rules("GET /repos/*/widgets"))),
            List.of(Kind.INSPECTION_RULE_WIDENED)),
        Arguments.of(
            "an added rule that the old ones already cover is no loosening",
            doc(Map.of("api.github.com", rules("GET /repos/acme/**"))),
            doc(Map.of("api.github.com", rules("GET /repos/acme/**", "GET /repos/acme/widgets"))),
            List.of()),
        Arguments.of(
            "rules removed from a host that stays allowed are a loosening",
            doc(Map.of("api.github.com", rules("GET /repos/acme/**"))),
            doc(Map.of("api.github.com", Map.of())),
            List.of(Kind.INSPECTION_RULES_REMOVED)),
        Arguments.of(
            "the whole entry removed while the host stays allowed is a loosening",
            doc(Map.of("api.github.com", rules("GET /repos/acme/**"))),
            doc(Map.of()),
            List.of(Kind.INSPECTION_RULES_REMOVED)),
        Arguments.of(
            "an empty rule list (nothing allowed) to one rule is a loosening",
            doc(Map.of("api.github.com", rules())),
            doc(Map.of("api.github.com", rules("GET /"))),
            List.of(Kind.INSPECTION_RULE_WIDENED)),
        Arguments.of(
            "the host and its entry removed together is a tightening",
            doc(Map.of("api.github.com", rules("GET /repos/acme/**"))),
            doc(List.of("uploads.github.com"), Map.of()),
            List.of()),
        Arguments.of(
            "a credential injected where none was is a loosening",
            doc(Map.of("api.github.com", rules("GET /repos/acme/**"))),
            doc(Map.of("api.github.com", inject("github", "GET /repos/acme/**"))),
            List.of(Kind.INJECTION_ADDED)),
        Arguments.of(
            "another credential injected is a loosening",
            doc(Map.of("api.github.com", inject("github"))),
            doc(Map.of("api.github.com", inject("other"))),
            List.of(Kind.INJECTION_ADDED, Kind.CREDENTIAL_TO_WORKLOAD)),
        Arguments.of(
            "the same credential injected into a second host is a loosening",
            doc(Map.of("api.github.com", inject("github"))),
            doc(Map.of("api.github.com", inject("github"), "uploads.github.com", inject("github"))),
            List.of(Kind.INJECTION_ADDED)),
        Arguments.of(
            "another header for the injected credential is a loosening",
            doc(Map.of("api.github.com", inject("github"))),
            doc(Map.of("api.github.com", Map.of("credential", "github", "header", "X-Token"))),
            List.of(Kind.INJECTION_CHANGED)),
        Arguments.of(
            "the header's spelling alone is no change",
            doc(Map.of("api.github.com", inject("github"))),
            doc(
                Map.of(
                    "api.github.com", Map.of("credential", "github", "header", "authorization"))),
            List.of()),
        Arguments.of(
            "an injection removed gives the credential to the workload: a loosening",
            doc(Map.of("api.github.com", inject("github", "GET /repos/acme/**"))),
            doc(Map.of("api.github.com", rules("GET /repos/acme/**"))),
            List.of(Kind.CREDENTIAL_TO_WORKLOAD)),
        Arguments.of(
            "an injection removed with its credential is a tightening",
            doc(Map.of("api.github.com", inject("github", "GET /repos/acme/**"))),
            Map.of(
                "enabled",
                true,
                "agents",
                Map.of(
                    "helper",
                    Map.of(
                        "allow",
                        List.of("api.github.com", "uploads.github.com"),
                        "credentials",
                        Map.of("other", GITHUB_TOKEN),
                        "inspect",
                        Map.of("api.github.com", rules("GET /repos/acme/**"))))),
            List.of()));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("changes")
  void judgesEachChange(
      String name, Map<String, Object> before, Map<String, Object> after, List<Kind> expected) {
    List<Loosening> found =
        Loosenings.between(SandboxConfig.read(before), SandboxConfig.read(after));
    assertThat(found)
        .as(name)
        .extracting(Loosening::kind)
        .containsExactlyInAnyOrderElementsOf(expected);
  }

  /**
   * A loosening split into two saves is still caught: the rules are first removed with the host (a
   * tightening), then the host comes back uninspected, which is judged against the version in
   * between and so caught as an added allow-list entry.
   */
  @Test
  void aLooseningSplitIntoRemoveThenReAddIsStillCaught() {
    SandboxConfig ruled =
        SandboxConfig.read(doc(Map.of("api.github.com", rules("GET /repos/acme/**"))));
    SandboxConfig removed = SandboxConfig.read(doc(List.of("uploads.github.com"), Map.of()));
    SandboxConfig reAdded = SandboxConfig.read(doc(Map.of()));
    assertThat(Loosenings.between(ruled, removed)).isEmpty();
    assertThat(Loosenings.between(removed, reAdded))
        .extracting(Loosening::kind)
        .containsExactly(Kind.ALLOW_ENTRY_ADDED);
  }

  /** The same with an injection: remove the injection with the credential, then re-add both. */
  @Test
  void aCredentialMovedIntoTheSandboxInTwoStepsIsStillCaught() {
    SandboxConfig held = SandboxConfig.read(doc(Map.of("api.github.com", inject("github"))));
    Map<String, Object> withoutGithub =
        Map.of(
            "enabled",
            true,
            "agents",
            Map.of(
                "helper",
                Map.of(
                    "allow",
                    List.of("api.github.com", "uploads.github.com"),
                    "credentials",
                    Map.of("other", GITHUB_TOKEN))));
    SandboxConfig gone = SandboxConfig.read(withoutGithub);
    SandboxConfig back = SandboxConfig.read(doc(Map.of()));
    assertThat(Loosenings.between(held, gone)).isEmpty();
    assertThat(Loosenings.between(gone, back))
        .extracting(Loosening::kind)
        .containsExactly(Kind.CREDENTIAL_ADDED);
  }

  @Test
  void eachLooseningNamesItsPath() {
    List<Loosening> found =
        Loosenings.between(
            SandboxConfig.read(doc(Map.of("api.github.com", inject("github", "GET /a")))),
            SandboxConfig.read(doc(Map.of("api.github.com", rules("GET /a", "POST /b")))));
    assertThat(found)
        .extracting(Loosening::path)
        .containsExactlyInAnyOrder(
            "agents.helper.inspect[\"api.github.com\"].rules[1]",
            "agents.helper.credentials.github");
  }
}
