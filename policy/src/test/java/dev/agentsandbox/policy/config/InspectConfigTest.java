package dev.agentsandbox.policy.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** An agent's inspected hosts ({@code agents.NAME.inspect}): how they read and what is refused. */
class InspectConfigTest {
  private static Map<String, Object> doc(Object inspect) {
    Map<String, Object> agent = new LinkedHashMap<>();
    agent.put("allow", List.of("api.github.com", "*.cdn.example.com", "uploads.github.com"));
    agent.put(
        "credentials",
        Map.of("github", Map.of("source", "command", "command", "github-app-token")));
    agent.put("inspect", inspect);
    return Map.of("enabled", true, "agents", Map.of("helper", agent));
  }

  @Test
  void anEntryReadsWithItsDefaultsWrittenOut() {
    SandboxConfig config =
        SandboxConfig.read(
            doc(
                Map.of(
                    "api.github.com",
                    Map.of("credential", "github", "rules", List.of("GET,HEAD /repos/acme/**")),
                    "uploads.github.com",
                    Map.of("rules", List.of()))));
    AgentSettings helper = config.agents().get("helper");
    InspectedHost api = helper.inspect().get("api.github.com");
    assertThat(api.inject())
        .contains(new Injection("github", "Authorization", "Bearer {credential}"));
    assertThat(api.rules().orElseThrow().asStrings()).containsExactly("GET,HEAD /repos/acme/**");
    assertThat(helper.inspect().get("uploads.github.com").rules().orElseThrow().rules())
        .as("an empty rule list refuses every request")
        .isEmpty();
    assertThat(helper.proxyHeldCredentials()).containsExactly("github");
    @SuppressWarnings("unchecked")
    Map<String, Object> written =
        (Map<String, Object>)
            ((Map<String, Object>)
                    ((Map<String, Object>) config.toTree().get("agents")).get("helper"))
                .get("inspect");
    assertThat(written.get("api.github.com"))
        .isEqualTo(
            Map.of(
                "rules", List.of("GET,HEAD /repos/acme/**"),
                "credential", "github",
                "header", "Authorization",
                "template", "Bearer {credential}"));
    assertThat(SandboxConfig.read(config.toTree())).isEqualTo(config);
  }

  @Test
  void aHeaderOtherThanAuthorizationDefaultsToTheBareValue() {
    SandboxConfig config =
        SandboxConfig.read(
            doc(Map.of("api.github.com", Map.of("credential", "github", "header", "X-Api-Key"))));
    assertThat(config.agents().get("helper").inspect().get("api.github.com").inject().orElseThrow())
        .isEqualTo(new Injection("github", "X-Api-Key", "{credential}"));
  }

  @Test
  void withoutInspectNothingIsInspectedAndTheDocumentStillReads() {
    Map<String, Object> agent = Map.of("allow", List.of("api.github.com"));
    SandboxConfig config =
        SandboxConfig.read(Map.of("enabled", true, "agents", Map.of("helper", agent)));
    assertThat(config.agents().get("helper").inspect()).isEmpty();
    assertThat(config.agents().get("helper").proxyHeldCredentials()).isEmpty();
  }

  static Stream<Arguments> refused() {
    String at = "agents.helper.inspect[\"api.github.com\"]";
    return Stream.of(
        Arguments.of(
            "inspect is not an object",
            List.of("api.github.com"),
            "agents.helper.inspect",
            "must be an object"),
        Arguments.of(
            "a wildcard",
            Map.of("*.cdn.example.com", Map.of()),
            "agents.helper.inspect[\"*.cdn.example.com\"]",
            "wildcard"),
        Arguments.of(
            "a host with a port",
            Map.of("api.github.com:443", Map.of()),
            "agents.helper.inspect[\"api.github.com:443\"]",
            "host name alone"),
        Arguments.of(
            "a host in another spelling",
            Map.of("API.github.com", Map.of()),
            "agents.helper.inspect[\"API.github.com\"]",
            "write the host name as api.github.com"),
        Arguments.of(
            "an IP address",
            Map.of("127.0.0.1", Map.of()),
            "agents.helper.inspect[\"127.0.0.1\"]",
            "address"),
        Arguments.of(
            "a host the allow-list does not name",
            Map.of("gist.github.com", Map.of()),
            "agents.helper.inspect[\"gist.github.com\"]",
            "not on this agent's allow-list"),
        Arguments.of(
            "an unknown field",
            Map.of("api.github.com", Map.of("paths", List.of())),
            at + ".paths",
            "unknown field"),
        Arguments.of(
            "an unknown credential",
            Map.of("api.github.com", Map.of("credential", "aws")),
            at + ".credential",
            "not one of this agent's credentials"),
        Arguments.of(
            "a header without a credential",
            Map.of("api.github.com", Map.of("header", "X-Key")),
            at + ".header",
            "only an entry that injects"),
        Arguments.of(
            "a template without a credential",
            Map.of("api.github.com", Map.of("template", "{credential}")),
            at + ".template",
            "only an entry that injects"),
        Arguments.of(
            "the Host header",
            Map.of("api.github.com", Map.of("credential", "github", "header", "Host")),
            at + ".header",
            "cannot be injected"),
        Arguments.of(
            "a framing header",
            Map.of("api.github.com", Map.of("credential", "github", "header", "Transfer-Encoding")),
            at + ".header",
            "cannot be injected"),
        Arguments.of(
            "a proxy header",
            Map.of(
                "api.github.com", Map.of("credential", "github", "header", "Proxy-Authorization")),
            at + ".header",
            "cannot be injected"),
        Arguments.of(
            "the proxy's own header",
            Map.of(
                "api.github.com",
                Map.of("credential", "github", "header", "X-Agent-Sandbox-Denied")),
            at + ".header",
            "cannot be injected"),
        Arguments.of(
            "a header name with a colon",
            Map.of("api.github.com", Map.of("credential", "github", "header", "X:Y")),
            at + ".header",
            "header name"),
        Arguments.of(
            "a template without the slot",
            Map.of("api.github.com", Map.of("credential", "github", "template", "Bearer")),
            at + ".template",
            "exactly once"),
        Arguments.of(
            "a template with the slot twice",
            Map.of(
                "api.github.com",
                Map.of("credential", "github", "template", "{credential}{credential}")),
            at + ".template",
            "exactly once"),
        Arguments.of(
            "a template with a line break (header injection)",
            Map.of(
                "api.github.com",
                Map.of("credential", "github", "template", "{credential}\r\nHost: evil")),
            at + ".template",
            "printable ASCII"),
        Arguments.of(
            "a template with another brace",
            Map.of(
                "api.github.com", Map.of("credential", "github", "template", "{x} {credential}")),
            at + ".template",
            "only as"),
        Arguments.of(
            "rules that are not a list",
            Map.of("api.github.com", Map.of("rules", "GET /")),
            at + ".rules",
            "must be a list"),
        Arguments.of(
            "a bad rule, at its index",
            Map.of("api.github.com", Map.of("rules", List.of("GET /a", "GET a"))),
            at + ".rules[1]",
            "starts with /"),
        Arguments.of(
            "a rule that is not a string",
            Map.of("api.github.com", Map.of("rules", List.of(7))),
            at + ".rules[0]",
            "must be a string"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("refused")
  void refusesEachProblemAtItsPath(String name, Object inspect, String path, String message) {
    assertThatThrownBy(() -> SandboxConfig.read(doc(inspect)))
        .as(name)
        .isInstanceOfSatisfying(
            InvalidConfigException.class,
            e ->
                assertThat(e.problems())
                    .as(name)
                    .anySatisfy(
                        p -> {
                          assertThat(p.path()).isEqualTo(path);
                          assertThat(p.message()).contains(message);
                        }));
  }

  @Test
  void everyProblemIsReportedNotTheFirst() {
    assertThatThrownBy(
            () ->
                SandboxConfig.read(
                    doc(
                        Map.of(
                            "api.github.com",
                            Map.of("credential", "nope", "rules", List.of("GET x")),
                            "*.cdn.example.com",
                            Map.of()))))
        .isInstanceOfSatisfying(
            InvalidConfigException.class,
            e -> assertThat(e.problems()).hasSizeGreaterThanOrEqualTo(3));
  }

  @Test
  void atMostThirtyTwoHosts() {
    Map<String, Object> many = new LinkedHashMap<>();
    List<String> allow = new java.util.ArrayList<>();
    for (int i = 0; i < 33; i++) {
      many.put("h" + i + ".example.com", Map.of());
      allow.add("h" + i + ".example.com");
    }
    Map<String, Object> agent = Map.of("allow", allow, "inspect", many);
    assertThatThrownBy(() -> SandboxConfig.read(Map.of("agents", Map.of("helper", agent))))
        .hasMessageContaining("at most 32");
  }
}
