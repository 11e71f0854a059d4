package dev.agentsandbox.policy.evidence;

import static dev.agentsandbox.policy.evidence.Observations.config;
import static dev.agentsandbox.policy.evidence.Observations.deny;
import static dev.agentsandbox.policy.evidence.Observations.restricted;
import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.policy.config.EgressPolicy;
import dev.agentsandbox.policy.config.SandboxConfig;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Which entries a proposal adds for which refusals, one row per rule: the narrowest entries, the
 * wildcard only for several names and never over a public suffix, and every refusal no entry fixes
 * listed apart with why.
 */
class EgressProposerTest {
  private static final EgressPolicy OPEN = EgressPolicy.DEFAULT;

  /** One case: the agent's allow-list, the instance policy, refusals, what is proposed. */
  record Case(
      List<String> allow,
      EgressPolicy policy,
      List<EgressObservation> refusals,
      List<String> entries,
      Map<String, String> notFixable,
      List<String> nowAllowed) {}

  private static Arguments row(String name, Case c) {
    return Arguments.of(name, c);
  }

  private static Case proposes(List<EgressObservation> refusals, String... entries) {
    return new Case(List.of(), OPEN, refusals, List.of(entries), Map.of(), List.of());
  }

  private static Case staysRefused(EgressObservation refusal, String why) {
    return new Case(
        List.of(), OPEN, List.of(refusal), List.of(), Map.of(refusal.host(), why), List.of());
  }

  private static List<EgressObservation> notAllowed(int port, String... hosts) {
    return Stream.of(hosts).map(h -> deny(h, port, "not-allowed", "r-" + h)).toList();
  }

  static Stream<Arguments> cases() {
    return Stream.of(
        row(
            "one refused name is proposed exactly",
            proposes(notAllowed(443, "pypi.org"), "pypi.org")),
        row(
            "a refusal on another port is proposed as name:port",
            proposes(notAllowed(8443, "files.example.com"), "files.example.com:8443")),
        row(
            "refusals on 80 and 443 of one name make one entry without a port",
            proposes(
                List.of(
                    deny("pypi.org", 80, "not-allowed", "r1"),
                    deny("pypi.org", 443, "not-allowed", "r2")),
                "pypi.org")),
        row(
            "port-not-allowed on 443 beside an entry for 8443 proposes the bare name",
            new Case(
                List.of("git.example.com:8443"),
                OPEN,
                List.of(deny("git.example.com", 443, "port-not-allowed", "r1")),
                List.of("git.example.com"),
                Map.of(),
                List.of())),
        row(
            "port-not-allowed on 22 beside a bare entry proposes name:22",
            new Case(
                List.of("git.example.com"),
                OPEN,
                List.of(deny("git.example.com", 22, "port-not-allowed", "r1")),
                List.of("git.example.com:22"),
                Map.of(),
                List.of())),
        row(
            "three names under one registrable domain earn a wildcard",
            proposes(
                notAllowed(443, "a.example.com", "b.example.com", "c.example.com"),
                "*.example.com")),
        row(
            "two names under one domain stay exact",
            proposes(
                notAllowed(443, "a.example.com", "b.example.com"),
                "a.example.com",
                "b.example.com")),
        row(
            "the narrowest suffix wins: *.cdn.example.com, not *.example.com",
            proposes(
                notAllowed(
                    443,
                    "a.cdn.example.com",
                    "b.cdn.example.com",
                    "c.cdn.example.com",
                    "api.example.com"),
                "*.cdn.example.com",
                "api.example.com")),
        row(
            "the apex stays exact beside its wildcard (*.x never matches x)",
            proposes(
                notAllowed(443, "example.com", "a.example.com", "b.example.com", "c.example.com"),
                "*.example.com",
                "example.com")),
        row(
            "names refused on different ports do not share a wildcard",
            proposes(
                List.of(
                    deny("a.example.com", 443, "not-allowed", "r1"),
                    deny("b.example.com", 443, "not-allowed", "r1"),
                    deny("c.example.com", 8443, "not-allowed", "r1")),
                "a.example.com",
                "b.example.com",
                "c.example.com:8443")),
        row(
            "three names on one other port earn *.suffix:port",
            proposes(
                notAllowed(8443, "a.example.com", "b.example.com", "c.example.com"),
                "*.example.com:8443")),
        row(
            "three owners under .com never make *.com",
            proposes(
                notAllowed(443, "alpha.com", "beta.com", "gamma.com"),
                "alpha.com",
                "beta.com",
                "gamma.com")),
        row(
            "three github.io sites never make *.github.io",
            proposes(
                notAllowed(443, "a.github.io", "b.github.io", "c.github.io"),
                "a.github.io",
                "b.github.io",
                "c.github.io")),
        row(
            "three co.uk registrants never make *.co.uk",
            proposes(
                notAllowed(443, "shop.co.uk", "bank.co.uk", "news.co.uk"),
                "bank.co.uk",
                "news.co.uk",
                "shop.co.uk")),
        row(
            "three names of one co.uk owner make *.example.co.uk",
            proposes(
                notAllowed(443, "a.example.co.uk", "b.example.co.uk", "c.example.co.uk"),
                "*.example.co.uk")),
        row(
            "names under an unlisted TLD group under its default-rule domain",
            proposes(
                notAllowed(18080, "a.upstream.test", "b.upstream.test", "c.upstream.test"),
                "*.upstream.test:18080")),
        row(
            "names under an unlisted TLD from different owners stay exact",
            proposes(notAllowed(443, "a.test", "b.test", "c.test"), "a.test", "b.test", "c.test")),
        row(
            "an IP literal stays refused",
            staysRefused(deny("10.0.0.1", 443, "ip-literal", "r1"), "ip-literal")),
        row(
            "a name answering a private address stays refused",
            staysRefused(
                deny("internal.example.com", 443, "non-public-address", "r1"),
                "non-public-address")),
        row(
            "the metadata name stays refused",
            staysRefused(
                deny("metadata.google.internal", 80, "non-public-address", "r1"),
                "non-public-address")),
        row(
            "an SNI mismatch stays refused",
            staysRefused(deny("front.example.com", 443, "sni-mismatch", "r1"), "sni-mismatch")),
        row(
            "a tunnel without SNI stays refused",
            staysRefused(deny("quiet.example.com", 443, "sni-missing", "r1"), "sni-missing")),
        row(
            "the instance policy's refusal stays (an entry never widens it)",
            staysRefused(
                deny("blocked.example.com", 443, "instance-policy", "r1"), "instance-policy")),
        row(
            "a DNS failure stays refused",
            staysRefused(deny("gone.example.com", 443, "dns-failure", "r1"), "dns-failure")),
        row(
            "a refused upgrade stays refused",
            staysRefused(deny("ws.example.com", 80, "upgrade-refused", "r1"), "upgrade-refused")),
        row(
            "a failed connect stays",
            staysRefused(deny("down.example.com", 443, "connect-failed", "r1"), "upstream-failed")),
        row(
            "a bad request stays",
            staysRefused(deny("x.example.com", 80, "bad-request", "r1"), "malformed-request")),
        row(
            "the connection limit stays",
            staysRefused(deny("x.example.com", 443, "too-many-connections", "r1"), "proxy-state")),
        row(
            "an inspected host's method rule is not an allow-list refusal",
            staysRefused(
                deny("api.example.com", 443, "method-not-allowed", "r1"),
                "not-an-allow-list-refusal")),
        row(
            "an inspected host's path rule is not an allow-list refusal",
            staysRefused(
                deny("api.example.com", 443, "path-not-allowed", "r1"),
                "not-an-allow-list-refusal")),
        row(
            "a request naming another host inside an inspected tunnel is not an allow-list"
                + " refusal",
            staysRefused(
                deny("api.example.com", 443, "authority-mismatch", "r1"),
                "not-an-allow-list-refusal")),
        row(
            "an inspected host's invalid certificate stays (the upstream failed)",
            staysRefused(
                deny("api.example.com", 443, "upstream-certificate", "r1"), "upstream-failed")),
        row(
            "an inspected host's failed TLS handshake stays (the upstream failed)",
            staysRefused(deny("api.example.com", 443, "upstream-tls", "r1"), "upstream-failed")),
        row(
            "a deny row claiming 'allowed' is not an allow-list refusal",
            staysRefused(
                deny("api.example.com", 443, "allowed", "r1"), "not-an-allow-list-refusal")),
        row(
            "hostile: an upper-case host is not canonical",
            staysRefused(deny("PyPI.org", 443, "not-allowed", "r1"), "not-canonical")),
        row(
            "hostile: a trailing dot is not canonical",
            staysRefused(deny("pypi.org.", 443, "not-allowed", "r1"), "not-canonical")),
        row(
            "hostile: a wildcard as a host",
            staysRefused(deny("*.co.uk", 443, "not-allowed", "r1"), "not-a-host-name")),
        row(
            "hostile: a bare star",
            staysRefused(deny("*", 443, "not-allowed", "r1"), "not-a-host-name")),
        row(
            "hostile: an address spelled in hex",
            staysRefused(deny("0x7f.1", 443, "not-allowed", "r1"), "ip-literal")),
        row(
            "hostile: a bracketed IPv6 address",
            staysRefused(deny("[::1]", 443, "not-allowed", "r1"), "ip-literal")),
        row(
            "hostile: user information",
            staysRefused(deny("user@evil.com", 443, "not-allowed", "r1"), "not-a-host-name")),
        row(
            "hostile: a path",
            staysRefused(deny("evil.com/x", 443, "not-allowed", "r1"), "not-a-host-name")),
        row(
            "hostile: a port inside the host",
            staysRefused(deny("evil.com:22", 443, "not-allowed", "r1"), "ip-literal")),
        row(
            "hostile: a newline",
            staysRefused(deny("evil.com\nallow", 443, "not-allowed", "r1"), "not-a-host-name")),
        row(
            "hostile: non-ASCII",
            staysRefused(deny("bücher.example", 443, "not-allowed", "r1"), "not-a-host-name")),
        row(
            "hostile: an empty label",
            staysRefused(deny("a..example.com", 443, "not-allowed", "r1"), "not-a-host-name")),
        row(
            "hostile: an empty host",
            staysRefused(deny("", 443, "not-allowed", "r1"), "not-a-host-name")),
        row(
            "hostile: a name over 253 characters",
            staysRefused(
                deny("a".repeat(60) + ".b".repeat(100) + ".com", 443, "not-allowed", "r1"),
                "not-a-host-name")),
        row("hostile: no port", staysRefused(deny("pypi.org", 0, "not-allowed", "r1"), "no-port")),
        row(
            "hostile: a port over 65535",
            staysRefused(deny("pypi.org", 70000, "not-allowed", "r1"), "no-port")),
        row(
            "a refusal the current list allows now is listed as now allowed, not proposed",
            new Case(
                List.of("pypi.org"),
                OPEN,
                List.of(deny("pypi.org", 443, "not-allowed", "r1")),
                List.of(),
                Map.of(),
                List.of("pypi.org"))),
        row(
            "not-allowed then, but the instance policy refuses it now: stays refused",
            new Case(
                List.of("pypi.org"),
                restricted(List.of("files.pythonhosted.org")),
                List.of(deny("pypi.org", 443, "not-allowed", "r1")),
                List.of(),
                Map.of("pypi.org", "instance-policy"),
                List.of())));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void proposes(String name, Case c) {
    SandboxConfig config = config(c.allow());
    EgressProposal proposal = EgressProposer.propose("planner", config, c.policy(), c.refusals());
    assertThat(proposal.entries().stream().map(ProposedEntry::entry).sorted().toList())
        .as(name)
        .isEqualTo(c.entries().stream().sorted().toList());
    Map<String, String> notFixable = new TreeMap<>();
    proposal.notFixable().forEach(n -> notFixable.put(n.refusals().host(), n.why().wireName()));
    assertThat(notFixable).as(name + ": not fixable").isEqualTo(new TreeMap<>(c.notFixable()));
    assertThat(proposal.nowAllowed().stream().map(RefusalGroup::host).toList())
        .as(name + ": now allowed")
        .isEqualTo(c.nowAllowed());
    // Every proposal reads back through the configuration reader with the whole document.
    assertThat(SandboxConfig.read(afterTree(config, proposal)).agents().get("planner").allow())
        .isEqualTo(proposal.allowAfter());
    assertThat(proposal.allowAfter().asStrings()).containsAll(c.allow()).containsAll(c.entries());
    assertThat(proposal.loosenings()).hasSize(c.entries().size());
    for (ProposedEntry entry : proposal.entries()) {
      assertThat(entry.entry())
          .as("never a wildcard over a public suffix")
          .doesNotMatch("\\*\\.(com|co\\.uk|github\\.io|test)(:[0-9]+)?");
    }
  }

  static Map<String, Object> afterTree(SandboxConfig config, EgressProposal proposal) {
    Map<String, Object> tree = config.toTree();
    @SuppressWarnings("unchecked")
    Map<String, Object> agents = (Map<String, Object>) tree.get("agents");
    @SuppressWarnings("unchecked")
    Map<String, Object> agent =
        new java.util.LinkedHashMap<>((Map<String, Object>) agents.get("planner"));
    agent.put("allow", proposal.allowAfter().asStrings());
    agents.put("planner", agent);
    return tree;
  }
}
