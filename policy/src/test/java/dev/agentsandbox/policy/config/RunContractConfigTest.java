package dev.agentsandbox.policy.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.policy.config.Loosening.Kind;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** An agent's credentials and output caps: how they read, and which changes loosen. */
class RunContractConfigTest {
  private static Map<String, Object> agent(Object credentials, Object outputs) {
    Map<String, Object> agent = new LinkedHashMap<>();
    agent.put("allow", List.of("api.vendor.com"));
    if (credentials != null) {
      agent.put("credentials", credentials);
    }
    if (outputs != null) {
      agent.put("outputs", outputs);
    }
    return Map.of("enabled", true, "agents", Map.of("helper", agent));
  }

  private static final Map<String, Object> GATEWAY =
      Map.of("source", "jwt", "audience", "llm-gateway");
  private static final Map<String, Object> AWS = Map.of("source", "command", "command", "aws-plan");

  @Test
  void everySourceReadsAndWritesBack() {
    SandboxConfig config =
        SandboxConfig.read(
            agent(
                Map.of(
                    "gateway", GATEWAY,
                    "aws", Map.of("source", "command", "command", "aws-plan", "env", "AWS_SESSION"),
                    "self", Map.of("source", "run-token")),
                Map.of("max_bytes", 1024, "max_files", 3)));
    AgentSettings helper = config.agents().get("helper");
    assertThat(helper.credentials()).containsOnlyKeys("aws", "gateway", "self");
    assertThat(helper.credentials().get("gateway").audience()).contains("llm-gateway");
    assertThat(helper.credentials().get("aws").env()).contains("AWS_SESSION");
    assertThat(helper.credentials().get("self").source())
        .isEqualTo(CredentialSpec.Source.RUN_TOKEN);
    assertThat(helper.outputs()).isEqualTo(new OutputLimits(1024, 3));
    assertThat(SandboxConfig.read(config.toTree())).isEqualTo(config);
  }

  static Stream<Arguments> refused() {
    return Stream.of(
        Arguments.of(
            "an unknown source",
            Map.of("x", Map.of("source", "vault")),
            "agents.helper.credentials.x.source"),
        Arguments.of("no source", Map.of("x", Map.of()), "agents.helper.credentials.x.source"),
        Arguments.of(
            "a jwt without an audience",
            Map.of("x", Map.of("source", "jwt")),
            "agents.helper.credentials.x.audience"),
        Arguments.of(
            "an audience with a space",
            Map.of("x", Map.of("source", "jwt", "audience", "a b")),
            "agents.helper.credentials.x.audience"),
        Arguments.of(
            "an audience on a run token",
            Map.of("x", Map.of("source", "run-token", "audience", "a")),
            "agents.helper.credentials.x.audience"),
        Arguments.of(
            "a command given as a path (only operator-registered names)",
            Map.of("x", Map.of("source", "command", "command", "/bin/sh")),
            "agents.helper.credentials.x.command"),
        Arguments.of(
            "a command credential without a command",
            Map.of("x", Map.of("source", "command")),
            "agents.helper.credentials.x.command"),
        Arguments.of(
            "a name that climbs out of the credentials folder",
            Map.of("../x", Map.of("source", "run-token")),
            "agents.helper.credentials"),
        Arguments.of(
            "an env name that sets the proxy",
            Map.of("x", Map.of("source", "run-token", "env", "HTTPS_PROXY")),
            "agents.helper.credentials.x.env"),
        Arguments.of(
            "an env name that injects a library",
            Map.of("x", Map.of("source", "run-token", "env", "LD_PRELOAD")),
            "agents.helper.credentials.x.env"),
        Arguments.of(
            "an env name in the sandbox's reserved prefix",
            Map.of("x", Map.of("source", "run-token", "env", "AGENT_SANDBOX_OUT")),
            "agents.helper.credentials.x.env"),
        Arguments.of(
            "an unknown field",
            Map.of("x", Map.of("source", "run-token", "ttl", 99999)),
            "agents.helper.credentials.x"));
  }

  @ParameterizedTest(name = "refused: {0}")
  @MethodSource("refused")
  void refusedWithItsPath(String why, Object credentials, String path) {
    assertThatThrownBy(() -> SandboxConfig.read(agent(credentials, null)))
        .as(why)
        .isInstanceOf(InvalidConfigException.class)
        .hasMessageContaining(path);
  }

  @Test
  void twoCredentialsCannotShareAnEnvironmentVariable() {
    assertThatThrownBy(
            () ->
                SandboxConfig.read(
                    agent(
                        Map.of(
                            "a", Map.of("source", "run-token", "env", "TOKEN"),
                            "b", Map.of("source", "run-token", "env", "TOKEN")),
                        null)))
        .hasMessageContaining("already delivered as TOKEN");
  }

  @Test
  void aRunHasOneTokenOfItsOwn() {
    assertThatThrownBy(
            () ->
                SandboxConfig.read(
                    agent(
                        Map.of(
                            "a", Map.of("source", "run-token"),
                            "b", Map.of("source", "run-token")),
                        null)))
        .hasMessageContaining("at most one run-token credential");
  }

  @Test
  void outputCapsAreBounded() {
    assertThatThrownBy(() -> SandboxConfig.read(agent(null, Map.of("max_bytes", (1L << 30) + 1))))
        .hasMessageContaining("agents.helper.outputs.max_bytes");
    assertThatThrownBy(() -> SandboxConfig.read(agent(null, Map.of("max_files", -1))))
        .hasMessageContaining("agents.helper.outputs.max_files");
  }

  static Stream<Arguments> changes() {
    return Stream.of(
        Arguments.of(
            "a credential added is a loosening",
            null,
            Map.of("g", GATEWAY),
            null,
            null,
            List.of(Kind.CREDENTIAL_ADDED)),
        Arguments.of(
            "a credential removed is not", Map.of("g", GATEWAY), null, null, null, List.of()),
        Arguments.of(
            "another audience is a loosening",
            Map.of("g", GATEWAY),
            Map.of("g", Map.of("source", "jwt", "audience", "billing-api")),
            null,
            null,
            List.of(Kind.CREDENTIAL_WIDENED)),
        Arguments.of(
            "another registered command is a loosening",
            Map.of("a", AWS),
            Map.of("a", Map.of("source", "command", "command", "aws-admin")),
            null,
            null,
            List.of(Kind.CREDENTIAL_WIDENED)),
        Arguments.of(
            "another source is a loosening",
            Map.of("a", Map.of("source", "run-token")),
            Map.of("a", AWS),
            null,
            null,
            List.of(Kind.CREDENTIAL_WIDENED)),
        Arguments.of(
            "delivering in the environment too is a loosening",
            Map.of("g", GATEWAY),
            Map.of("g", Map.of("source", "jwt", "audience", "llm-gateway", "env", "GW")),
            null,
            null,
            List.of(Kind.CREDENTIAL_IN_ENV)),
        Arguments.of(
            "files only again is not",
            Map.of("g", Map.of("source", "jwt", "audience", "llm-gateway", "env", "GW")),
            Map.of("g", GATEWAY),
            null,
            null,
            List.of()),
        Arguments.of(
            "output caps raised are loosenings, each",
            null,
            null,
            Map.of("max_bytes", 100, "max_files", 1),
            Map.of("max_bytes", 200, "max_files", 2),
            List.of(Kind.OUTPUTS_RAISED, Kind.OUTPUTS_RAISED)),
        Arguments.of(
            "output caps lowered are not",
            null,
            null,
            Map.of("max_bytes", 200, "max_files", 2),
            Map.of("max_bytes", 100, "max_files", 1),
            List.of()));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("changes")
  void loosenings(
      String why,
      Object credentialsBefore,
      Object credentialsAfter,
      Object outputsBefore,
      Object outputsAfter,
      List<Kind> expected) {
    SandboxConfig before = SandboxConfig.read(agent(credentialsBefore, outputsBefore));
    SandboxConfig after = SandboxConfig.read(agent(credentialsAfter, outputsAfter));
    assertThat(Loosenings.between(before, after))
        .as(why)
        .extracting(Loosening::kind)
        .containsExactlyElementsOf(expected);
  }
}
