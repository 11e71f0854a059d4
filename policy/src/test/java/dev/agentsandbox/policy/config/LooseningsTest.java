package dev.agentsandbox.policy.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.policy.config.Loosening.Kind;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class LooseningsTest {

  /** Builds a one-agent document; {@code extra} adds or overrides agent fields. */
  private static Map<String, Object> doc(boolean enabled, String backend, Object... agentFields) {
    Map<String, Object> agent = new LinkedHashMap<>();
    for (int i = 0; i < agentFields.length; i += 2) {
      agent.put((String) agentFields[i], agentFields[i + 1]);
    }
    Map<String, Object> doc = new LinkedHashMap<>();
    doc.put("enabled", enabled);
    doc.put("backend", backend);
    doc.put("agents", Map.of("helper", agent));
    return doc;
  }

  private static Map<String, Object> with(Map<String, Object> doc, String key, Object value) {
    Map<String, Object> copy = new LinkedHashMap<>(doc);
    copy.put(key, value);
    return copy;
  }

  private static final Map<String, Object> BASE =
      doc(true, "k8s", "allow", List.of("api.vendor.com", "*.cdn.example.com"));

  static Stream<Arguments> sandboxChanges() {
    return Stream.of(
        Arguments.of(
            "enabled turned on is a loosening",
            with(BASE, "enabled", false),
            BASE,
            List.of(Kind.ENABLED_TURNED_ON)),
        Arguments.of(
            "backend firecracker -> docker is a loosening",
            with(BASE, "backend", "firecracker"),
            with(BASE, "backend", "docker"),
            List.of(Kind.BACKEND_WEAKENED)),
        Arguments.of(
            "backend named -> auto is a loosening (auto may pick anything)",
            BASE,
            with(BASE, "backend", "auto"),
            List.of(Kind.BACKEND_WEAKENED)),
        Arguments.of(
            "backend docker -> auto is a loosening too",
            with(BASE, "backend", "docker"),
            with(BASE, "backend", "auto"),
            List.of(Kind.BACKEND_WEAKENED)),
        Arguments.of(
            "require_runtime_class true -> false is a loosening",
            with(BASE, "require_runtime_class", true),
            BASE,
            List.of(Kind.RUNTIME_CLASS_NOT_REQUIRED)),
        Arguments.of(
            "an agent added is a loosening",
            with(BASE, "agents", Map.of()),
            BASE,
            List.of(Kind.AGENT_ADDED)),
        Arguments.of(
            "the feature page's PUT from the defaults: turned on and agent added",
            Map.of(),
            Map.of(
                "enabled",
                true,
                "agents",
                Map.of("helper", Map.of("allow", List.of("api.vendor.com")))),
            List.of(Kind.ENABLED_TURNED_ON, Kind.AGENT_ADDED)),
        Arguments.of(
            "a new exact host is a loosening",
            BASE,
            doc(
                true,
                "k8s",
                "allow",
                List.of("api.vendor.com", "*.cdn.example.com", "evil.example")),
            List.of(Kind.ALLOW_ENTRY_ADDED)),
        Arguments.of(
            "a wildcard covering a former exact host widens it",
            BASE,
            doc(true, "k8s", "allow", List.of("*.vendor.com", "*.cdn.example.com")),
            List.of(Kind.ALLOW_ENTRY_WIDENED)),
        Arguments.of(
            "a port added to a former host widens it",
            BASE,
            doc(
                true,
                "k8s",
                "allow",
                List.of("api.vendor.com", "api.vendor.com:8443", "*.cdn.example.com")),
            List.of(Kind.ALLOW_ENTRY_WIDENED)),
        Arguments.of(
            "the apex of a former wildcard is not covered by it (get-around)",
            BASE,
            doc(
                true,
                "k8s",
                "allow",
                List.of("api.vendor.com", "*.cdn.example.com", "cdn.example.com")),
            List.of(Kind.ALLOW_ENTRY_ADDED)),
        Arguments.of(
            "a shorter wildcard suffix widens the former one (get-around)",
            BASE,
            doc(true, "k8s", "allow", List.of("api.vendor.com", "*.example.com")),
            List.of(Kind.ALLOW_ENTRY_WIDENED)),
        Arguments.of(
            "a lookalike suffix is a new host, not covered (get-around)",
            BASE,
            doc(
                true,
                "k8s",
                "allow",
                List.of("api.vendor.com", "*.cdn.example.com", "x.evilcdn.example.com")),
            List.of(Kind.ALLOW_ENTRY_ADDED)),
        Arguments.of(
            "raising warm is a loosening: more sandboxes run before anyone asked",
            with(BASE, "agents", Map.of("helper", Map.of("warm", 1))),
            with(BASE, "agents", Map.of("helper", Map.of("warm", 2))),
            List.of(Kind.WARM_RAISED)),
        Arguments.of(
            "a warm pool from none is a loosening",
            with(BASE, "agents", Map.of("helper", Map.of())),
            with(BASE, "agents", Map.of("helper", Map.of("warm", 1))),
            List.of(Kind.WARM_RAISED)),
        Arguments.of(
            "lowering warm is not a loosening",
            with(BASE, "agents", Map.of("helper", Map.of("warm", 3))),
            with(BASE, "agents", Map.of("helper", Map.of("warm", 0))),
            List.of()),
        Arguments.of(
            "raising a session's file cap is a loosening: more bytes cross in one operation",
            with(BASE, "agents", Map.of("helper", Map.of())),
            with(
                BASE,
                "agents",
                Map.of("helper", Map.of("sessions", Map.of("max_file_bytes", 128L << 20)))),
            List.of(Kind.SESSION_LIMIT_RAISED)),
        Arguments.of(
            "raising a step's stdin cap is a loosening",
            with(
                BASE,
                "agents",
                Map.of("helper", Map.of("sessions", Map.of("max_stdin_bytes", 1024)))),
            with(
                BASE,
                "agents",
                Map.of("helper", Map.of("sessions", Map.of("max_stdin_bytes", 1025)))),
            List.of(Kind.SESSION_LIMIT_RAISED)),
        Arguments.of(
            "raising both session caps is two loosenings",
            with(
                BASE,
                "agents",
                Map.of(
                    "helper",
                    Map.of("sessions", Map.of("max_file_bytes", 1, "max_stdin_bytes", 1)))),
            with(BASE, "agents", Map.of("helper", Map.of())),
            List.of(Kind.SESSION_LIMIT_RAISED, Kind.SESSION_LIMIT_RAISED)),
        Arguments.of(
            "lowering both session caps is not a loosening",
            with(BASE, "agents", Map.of("helper", Map.of())),
            with(
                BASE,
                "agents",
                Map.of(
                    "helper",
                    Map.of("sessions", Map.of("max_file_bytes", 0, "max_stdin_bytes", 0)))),
            List.of()),
        Arguments.of(
            "a session cap raised while another is lowered is still a loosening",
            with(
                BASE,
                "agents",
                Map.of(
                    "helper",
                    Map.of("sessions", Map.of("max_file_bytes", 1024, "max_stdin_bytes", 1024)))),
            with(
                BASE,
                "agents",
                Map.of(
                    "helper",
                    Map.of("sessions", Map.of("max_file_bytes", 1, "max_stdin_bytes", 2048)))),
            List.of(Kind.SESSION_LIMIT_RAISED)),
        Arguments.of(
            "a TTL raised is a loosening",
            with(BASE, "agents", Map.of("helper", Map.of("ttl_seconds", 600))),
            with(BASE, "agents", Map.of("helper", Map.of("ttl_seconds", 601))),
            List.of(Kind.TTL_RAISED)),
        Arguments.of(
            "cpus, memory and pids raised are three loosenings",
            with(BASE, "agents", Map.of("helper", Map.of())),
            with(
                BASE,
                "agents",
                Map.of(
                    "helper",
                    Map.of("resources", Map.of("cpus", 2, "memory_mb", 1024, "pids", 512)))),
            List.of(Kind.RESOURCE_RAISED, Kind.RESOURCE_RAISED, Kind.RESOURCE_RAISED)),
        Arguments.of(
            "a scope changed is a loosening (the other scope's rule may be wider)",
            with(BASE, "agents", Map.of("helper", Map.of())),
            with(BASE, "agents", Map.of("helper", Map.of("scope", "wide"))),
            List.of(Kind.SCOPE_CHANGED)),
        // Changes that must NOT count as loosenings.
        Arguments.of(
            "enabled turned off is not a loosening", BASE, with(BASE, "enabled", false), List.of()),
        Arguments.of(
            "an agent removed is not a loosening", BASE, with(BASE, "agents", Map.of()), List.of()),
        Arguments.of(
            "an entry removed is not a loosening",
            BASE,
            doc(true, "k8s", "allow", List.of("api.vendor.com")),
            List.of()),
        Arguments.of(
            "a wildcard narrowed to one host is not a loosening",
            BASE,
            doc(true, "k8s", "allow", List.of("api.vendor.com", "img.cdn.example.com")),
            List.of()),
        Arguments.of(
            "443 alone instead of 80 and 443 is not a loosening",
            BASE,
            doc(true, "k8s", "allow", List.of("api.vendor.com:443", "*.cdn.example.com")),
            List.of()),
        Arguments.of(
            "one entry split into :80 and :443 is not a loosening",
            BASE,
            doc(
                true,
                "k8s",
                "allow",
                List.of("api.vendor.com:80", "api.vendor.com:443", "*.cdn.example.com")),
            List.of()),
        Arguments.of(
            "the same entries respelled and reordered are not a loosening",
            BASE,
            doc(true, "k8s", "allow", List.of("*.CDN.example.com.", "API.vendor.com")),
            List.of()),
        Arguments.of(
            "backend auto -> docker is not a loosening (a named backend never falls back)",
            with(BASE, "backend", "auto"),
            with(BASE, "backend", "docker"),
            List.of()),
        Arguments.of(
            "backend docker -> firecracker is not a loosening",
            with(BASE, "backend", "docker"),
            with(BASE, "backend", "firecracker"),
            List.of()),
        Arguments.of(
            "require_runtime_class false -> true is not a loosening",
            BASE,
            with(BASE, "require_runtime_class", true),
            List.of()),
        Arguments.of(
            "a TTL and resources lowered are not loosenings",
            with(BASE, "agents", Map.of("helper", Map.of())),
            with(
                BASE,
                "agents",
                Map.of(
                    "helper",
                    Map.of(
                        "ttl_seconds",
                        60,
                        "resources",
                        Map.of("cpus", 0.5, "memory_mb", 128, "pids", 64)))),
            List.of()),
        Arguments.of(
            "an image changed is not a loosening (the fence does not depend on it)",
            with(BASE, "agents", Map.of("helper", Map.of())),
            with(BASE, "agents", Map.of("helper", Map.of("image", "registry.example.com/a:2"))),
            List.of()));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("sandboxChanges")
  void sandboxConfigLoosenings(
      String name, Map<String, Object> before, Map<String, Object> after, List<Kind> expected) {
    List<Loosening> found =
        Loosenings.between(SandboxConfig.read(before), SandboxConfig.read(after));
    assertThat(found).extracting(Loosening::kind).containsExactlyElementsOf(expected);
  }

  private static Map<String, Object> policy(Object defaultRule, Map<String, Object> scopes) {
    return Map.of("default", defaultRule, "scopes", scopes);
  }

  private static Map<String, Object> allow(String... entries) {
    return Map.of("allow", List.of(entries));
  }

  static Stream<Arguments> egressChanges() {
    return Stream.of(
        Arguments.of(
            "a scope list -> unrestricted is a loosening",
            policy("unrestricted", Map.of("helper", allow("api.vendor.com"))),
            policy("unrestricted", Map.of("helper", Map.of("unrestricted", true))),
            List.of(Kind.EGRESS_UNRESTRICTED)),
        Arguments.of(
            "the default list -> unrestricted is a loosening",
            policy(allow("api.vendor.com"), Map.of()),
            policy("unrestricted", Map.of()),
            List.of(Kind.EGRESS_UNRESTRICTED)),
        Arguments.of(
            "an entry added to a scope is a loosening",
            policy("unrestricted", Map.of("helper", allow("api.vendor.com"))),
            policy("unrestricted", Map.of("helper", allow("api.vendor.com", "b.example.com"))),
            List.of(Kind.ALLOW_ENTRY_ADDED)),
        Arguments.of(
            "a scope removed that falls back to an unrestricted default is a loosening",
            policy("unrestricted", Map.of("helper", allow("api.vendor.com"))),
            policy("unrestricted", Map.of()),
            List.of(Kind.EGRESS_UNRESTRICTED)),
        Arguments.of(
            "a new scope wider than the default list it was under is a loosening",
            policy(allow("api.vendor.com"), Map.of()),
            policy(allow("api.vendor.com"), Map.of("helper", allow("*.vendor.com"))),
            List.of(Kind.ALLOW_ENTRY_WIDENED)),
        Arguments.of(
            "unrestricted -> a list is not a loosening",
            policy("unrestricted", Map.of()),
            policy("unrestricted", Map.of("helper", allow("api.vendor.com"))),
            List.of()),
        Arguments.of(
            "a scope removed that falls back to a narrower default is not a loosening",
            policy(allow("api.vendor.com"), Map.of("helper", allow("*.vendor.com"))),
            policy(allow("api.vendor.com"), Map.of()),
            List.of()),
        Arguments.of(
            "unrestricted spelled two ways is not a change",
            policy("unrestricted", Map.of("helper", Map.of("unrestricted", true))),
            policy(Map.of("unrestricted", true), Map.of("helper", "unrestricted")),
            List.of()));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("egressChanges")
  void egressPolicyLoosenings(
      String name, Map<String, Object> before, Map<String, Object> after, List<Kind> expected) {
    List<Loosening> found = Loosenings.between(EgressPolicy.read(before), EgressPolicy.read(after));
    assertThat(found).extracting(Loosening::kind).containsExactlyElementsOf(expected);
  }
}
