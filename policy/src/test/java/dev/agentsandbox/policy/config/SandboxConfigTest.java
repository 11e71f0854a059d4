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

class SandboxConfigTest {

  private static Map<String, Object> agentDoc(Map<String, Object> agent) {
    return Map.of("agents", Map.of("helper", agent));
  }

  @Test
  void defaultsAreWrittenOut() {
    SandboxConfig config = SandboxConfig.read(agentDoc(Map.of("allow", List.of("api.vendor.com"))));
    assertThat(config.toTree())
        .isEqualTo(
            Map.of(
                "enabled",
                false,
                "backend",
                "auto",
                "require_runtime_class",
                false,
                "internal_widest",
                Map.of("ipv4", 24, "ipv6", 64),
                "agents",
                Map.of(
                    "helper",
                    Map.ofEntries(
                        Map.entry("allow", List.of("api.vendor.com")),
                        Map.entry("image", AgentSettings.DEFAULT_IMAGE),
                        Map.entry("scope", "helper"),
                        Map.entry("ttl_seconds", 900),
                        Map.entry("resources", Map.of("cpus", 1.0, "memory_mb", 512, "pids", 256)),
                        Map.entry("credentials", Map.of()),
                        Map.entry("outputs", Map.of("max_bytes", 16L << 20, "max_files", 100)),
                        Map.entry("internal", Map.of()),
                        Map.entry("warm", 0),
                        Map.entry("inspect", Map.of()),
                        Map.entry(
                            "sessions",
                            Map.of("max_file_bytes", 64L << 20, "max_stdin_bytes", 256 << 10))))));
  }

  @Test
  void treeReadsBackToTheSameConfig() {
    SandboxConfig config =
        SandboxConfig.read(
            Map.of(
                "enabled",
                true,
                "backend",
                "firecracker",
                "agents",
                Map.of(
                    "b", Map.of("allow", List.of("*.x.example.com:8443"), "scope", "team"),
                    "a", Map.of("ttl_seconds", 14400))));
    assertThat(SandboxConfig.read(config.toTree())).isEqualTo(config);
    assertThat(config.agents().keySet()).containsExactly("a", "b");
  }

  static Stream<Arguments> refusals() {
    return Stream.of(
        Arguments.of(
            "a bare * is refused at its index",
            agentDoc(Map.of("allow", List.of("a.example.com", "b.example.com", "*"))),
            "agents.helper.allow[2]: a bare * is refused"),
        Arguments.of(
            "an IP literal is refused",
            agentDoc(Map.of("allow", List.of("169.254.169.254"))),
            "agents.helper.allow[0]: IP addresses are refused"),
        Arguments.of(
            "a scheme is refused",
            agentDoc(Map.of("allow", List.of("https://api.vendor.com"))),
            "agents.helper.allow[0]: a scheme is refused"),
        Arguments.of(
            "a path is refused",
            agentDoc(Map.of("allow", List.of("api.vendor.com/v1"))),
            "agents.helper.allow[0]: a path, query or fragment is refused"),
        Arguments.of(
            "userinfo is refused",
            agentDoc(Map.of("allow", List.of("user@api.vendor.com"))),
            "agents.helper.allow[0]: user information"),
        Arguments.of(
            "non-ASCII names say the punycode form",
            agentDoc(Map.of("allow", List.of("bücher.example"))),
            "agents.helper.allow[0]: non-ASCII names are refused (write the punycode form"
                + " xn--bcher-kva.example)"),
        Arguments.of(
            "an over-long label is refused",
            agentDoc(Map.of("allow", List.of("a".repeat(64) + ".example.com"))),
            "agents.helper.allow[0]: a label is longer than 63"),
        Arguments.of(
            "an over-long name is refused",
            agentDoc(Map.of("allow", List.of(("a".repeat(60) + ".").repeat(5) + "com"))),
            "agents.helper.allow[0]: the host name is longer than 253"),
        Arguments.of(
            "the TTL hard cap is four hours",
            agentDoc(Map.of("ttl_seconds", 14401)),
            "agents.helper.ttl_seconds: must be from 1 to 14400, not 14401"),
        Arguments.of(
            "a warm pool over its cap is refused",
            agentDoc(Map.of("warm", 17)),
            "agents.helper.warm: must be from 0 to 16, not 17"),
        Arguments.of(
            "a session file cap over 1 GiB is refused",
            agentDoc(Map.of("sessions", Map.of("max_file_bytes", (1L << 30) + 1))),
            "agents.helper.sessions.max_file_bytes: must be from 0 to 1073741824, not 1073741825"),
        Arguments.of(
            "a negative session file cap is refused",
            agentDoc(Map.of("sessions", Map.of("max_file_bytes", -1))),
            "agents.helper.sessions.max_file_bytes: must be from 0 to 1073741824, not -1"),
        Arguments.of(
            "a stdin cap over the API's body limit is refused",
            agentDoc(Map.of("sessions", Map.of("max_stdin_bytes", (1 << 20) + 1))),
            "agents.helper.sessions.max_stdin_bytes: must be from 0 to 1048576, not 1048577"),
        Arguments.of(
            "a fractional stdin cap is refused",
            agentDoc(Map.of("sessions", Map.of("max_stdin_bytes", 1.5))),
            "agents.helper.sessions.max_stdin_bytes: must be a whole number"),
        Arguments.of(
            "an unknown field under sessions is refused at its path",
            agentDoc(Map.of("sessions", Map.of("max_steps", 8))),
            "agents.helper.sessions.max_steps"),
        Arguments.of(
            "sessions must be an object",
            agentDoc(Map.of("sessions", List.of(1))),
            "agents.helper.sessions"),
        Arguments.of(
            "a negative warm pool is refused",
            agentDoc(Map.of("warm", -1)),
            "agents.helper.warm: must be from 0 to 16, not -1"),
        Arguments.of(
            "a fractional TTL is refused",
            agentDoc(Map.of("ttl_seconds", 1.5)),
            "agents.helper.ttl_seconds: must be a whole number"),
        Arguments.of(
            // Eleven bytes of JSON; written out plainly it would be a billion digits.
            "a huge exponent is named in scientific notation",
            agentDoc(Map.of("ttl_seconds", new java.math.BigDecimal("1e999999999"))),
            "agents.helper.ttl_seconds: must be from 1 to 14400, not 1E+999999999"),
        Arguments.of(
            "a tiny fraction is named in scientific notation",
            agentDoc(Map.of("ttl_seconds", new java.math.BigDecimal("1e-999999999"))),
            "agents.helper.ttl_seconds: must be a whole number, not 1E-999999999"),
        Arguments.of(
            "memory over its cap is refused",
            agentDoc(Map.of("resources", Map.of("memory_mb", 1_000_000))),
            "agents.helper.resources.memory_mb: must be from 64 to 16384"),
        Arguments.of(
            "an unknown field is refused with its path",
            agentDoc(Map.of("alow", List.of())),
            "agents.helper.alow: unknown field"),
        Arguments.of(
            "effective_allow is read-only",
            agentDoc(Map.of("effective_allow", List.of("x.example.com"))),
            "agents.helper.effective_allow: is computed by the server"),
        Arguments.of(
            "an unknown backend is refused",
            Map.of("backend", "qemu"),
            "backend: 'qemu' is not a backend"),
        Arguments.of(
            "a string where a boolean belongs is refused",
            Map.of("enabled", "true"),
            "enabled: must be true or false, not a string"),
        Arguments.of(
            "an agent name must be a DNS label",
            Map.of("agents", Map.of("Bad Name", Map.of())),
            "agents[\"Bad Name\"]: 'Bad Name' is not a valid name"),
        Arguments.of(
            "an image must be an image reference",
            agentDoc(Map.of("image", "UPPER/case;rm -rf")),
            "agents.helper.image: 'UPPER/case;rm -rf' is not an image reference"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("refusals")
  void refusedWithPath(String name, Map<String, Object> doc, String expectedPrefix) {
    assertThatThrownBy(() -> SandboxConfig.read(doc))
        .isInstanceOfSatisfying(
            InvalidConfigException.class,
            e ->
                assertThat(e.problems())
                    .extracting(ConfigProblem::toString)
                    .anySatisfy(p -> assertThat(p).startsWith(expectedPrefix)));
  }

  @Test
  void everyProblemIsReportedNotOnlyTheFirst() {
    Map<String, Object> agent = new LinkedHashMap<>();
    agent.put("allow", List.of("*", "ok.example.com", "10.0.0.1"));
    agent.put("ttl_seconds", 0);
    Map<String, Object> doc = new LinkedHashMap<>();
    doc.put("enabled", 1);
    doc.put("agents", Map.of("helper", agent));
    assertThatThrownBy(() -> SandboxConfig.read(doc))
        .isInstanceOfSatisfying(
            InvalidConfigException.class,
            e ->
                assertThat(e.problems())
                    .extracting(ConfigProblem::path)
                    .containsExactly(
                        "enabled",
                        "agents.helper.allow[0]",
                        "agents.helper.allow[2]",
                        "agents.helper.ttl_seconds"));
  }

  @Test
  void bothSessionLimitsAreReportedAtTheirPathsTogether() {
    Map<String, Object> sessions = new LinkedHashMap<>();
    sessions.put("max_file_bytes", "64MiB");
    sessions.put("max_stdin_bytes", -5);
    sessions.put("max_steps", 8);
    assertThatThrownBy(() -> SandboxConfig.read(agentDoc(Map.of("sessions", sessions))))
        .isInstanceOfSatisfying(
            InvalidConfigException.class,
            e ->
                assertThat(e.problems())
                    .extracting(ConfigProblem::path)
                    .containsExactlyInAnyOrder(
                        "agents.helper.sessions.max_steps",
                        "agents.helper.sessions.max_file_bytes",
                        "agents.helper.sessions.max_stdin_bytes"));
  }

  @Test
  void sessionLimitsReadBackAndTheirCapsAreAccepted() {
    SandboxConfig config =
        SandboxConfig.read(
            agentDoc(Map.of("sessions", Map.of("max_file_bytes", 1L << 30, "max_stdin_bytes", 0))));
    assertThat(config.agents().get("helper").sessions()).isEqualTo(new SessionLimits(1L << 30, 0));
    assertThat(SandboxConfig.read(config.toTree())).isEqualTo(config);
  }

  @Test
  void effectiveAllowIsTheSandboxListNarrowedByTheScopeRule() {
    SandboxConfig config =
        SandboxConfig.read(
            Map.of(
                "agents",
                Map.of(
                    "helper", Map.of("allow", List.of("*.vendor.com", "db.example.com:5432")),
                    "other", Map.of("allow", List.of("x.example.org"), "scope", "free"))));
    EgressPolicy policy =
        EgressPolicy.read(
            Map.of(
                "scopes", Map.of("helper", Map.of("allow", List.of("api.vendor.com"))),
                "default", Map.of("allow", List.of())));
    assertThat(config.effectiveAllow(policy).get("helper").asStrings())
        .containsExactly("api.vendor.com");
    // "free" is not named, so the default (an empty list) applies and nothing is allowed.
    assertThat(config.effectiveAllow(policy).get("other").asStrings()).isEmpty();
    assertThat(config.effectiveAllow(EgressPolicy.DEFAULT).get("helper").asStrings())
        .containsExactly("*.vendor.com", "db.example.com:5432");
  }

  @Test
  void egressPolicyRefusesAmbiguousRules() {
    assertThatThrownBy(
            () ->
                EgressPolicy.read(
                    Map.of(
                        "scopes",
                        Map.of(
                            "a", Map.of("unrestricted", false),
                            "b", Map.of("unrestricted", true, "allow", List.of()),
                            "c", Map.of(),
                            "d", Map.of("allow", List.of("*"))))))
        .isInstanceOfSatisfying(
            InvalidConfigException.class,
            e ->
                assertThat(e.problems())
                    .extracting(ConfigProblem::path)
                    .containsExactlyInAnyOrder(
                        "scopes.a.unrestricted", "scopes.b", "scopes.c", "scopes.d.allow[0]"));
  }
}
