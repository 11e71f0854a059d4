package dev.agentsandbox.policy.evidence;

import static dev.agentsandbox.policy.evidence.Observations.allow;
import static dev.agentsandbox.policy.evidence.Observations.deny;
import static dev.agentsandbox.policy.evidence.Observations.lists;
import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.ScopeRule;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * What a change would have done to recorded egress, one row per rule: a tightening counts the runs
 * and hosts it would break, a loosening the refusals it would allow, and neither counts what the
 * change does not move.
 */
class EgressImpactTest {
  private static final ScopeRule OPEN = ScopeRule.UNRESTRICTED;

  /**
   * Expected counts: {@code events, runs, hosts} would-allow, then would-refuse; {@code refusedAs}
   * of the first would-refuse host when any.
   */
  record Expect(
      long allowEvents,
      int allowRuns,
      int allowHosts,
      long refuseEvents,
      int refuseRuns,
      int refuseHosts,
      String refusedAs) {}

  private static Arguments row(
      String name,
      Optional<AgentEgress> before,
      Optional<AgentEgress> after,
      List<EgressObservation> observations,
      Expect expect) {
    return Arguments.of(name, before, after, observations, expect);
  }

  private static Optional<AgentEgress> open(String... allow) {
    return Optional.of(lists(List.of(allow), OPEN));
  }

  private static Optional<AgentEgress> scoped(List<String> allow, List<String> rule) {
    return Optional.of(lists(allow, ScopeRule.of(AllowList.parse(rule))));
  }

  private static Expect refuses(long events, int runs, int hosts, String refusedAs) {
    return new Expect(0, 0, 0, events, runs, hosts, refusedAs);
  }

  private static Expect allows(long events, int runs, int hosts) {
    return new Expect(events, runs, hosts, 0, 0, 0, null);
  }

  private static final Expect NOTHING = new Expect(0, 0, 0, 0, 0, 0, null);

  static Stream<Arguments> cases() {
    return Stream.of(
        row(
            "removing an entry breaks every run that reached it",
            open("api.vendor.com", "pypi.org"),
            open("pypi.org"),
            List.of(
                allow("api.vendor.com", 443, "r1"),
                allow("api.vendor.com", 443, "r2"),
                allow("api.vendor.com", 443, "r3"),
                allow("pypi.org", 443, "r1")),
            refuses(3, 3, 1, "not-allowed")),
        row(
            "two hosts broken in one run count one run and two hosts",
            open("a.vendor.com", "b.vendor.com", "pypi.org"),
            open("pypi.org"),
            List.of(allow("a.vendor.com", 443, "r1"), allow("b.vendor.com", 443, "r1")),
            refuses(2, 1, 2, "not-allowed")),
        row(
            "a connection the current version already refuses is not this change's",
            open("pypi.org"),
            open(),
            List.of(allow("api.vendor.com", 443, "r1"), allow("pypi.org", 443, "r2")),
            refuses(1, 1, 1, "not-allowed")),
        row(
            "a wildcard replacing the exact host breaks nothing",
            open("api.vendor.com"),
            open("*.vendor.com"),
            List.of(allow("api.vendor.com", 443, "r1")),
            NOTHING),
        row(
            "80 and 443 narrowed to 443 breaks the connections on 80",
            open("pypi.org"),
            open("pypi.org:443"),
            List.of(allow("pypi.org", 80, "r1"), allow("pypi.org", 443, "r2")),
            refuses(1, 1, 1, "port-not-allowed")),
        row(
            "the instance policy restricting the scope breaks what it leaves out",
            open("pypi.org", "api.vendor.com"),
            scoped(List.of("pypi.org", "api.vendor.com"), List.of("pypi.org")),
            List.of(allow("api.vendor.com", 443, "r1"), allow("pypi.org", 443, "r1")),
            refuses(1, 1, 1, "instance-policy")),
        row(
            "removing the agent breaks all of its runs",
            open("pypi.org"),
            Optional.empty(),
            List.of(allow("pypi.org", 443, "r1"), allow("pypi.org", 443, "r2")),
            refuses(2, 2, 1, EgressImpact.AGENT_NOT_LISTED)),
        row(
            "refusals are never counted as broken connections",
            open("pypi.org"),
            open(),
            List.of(deny("pypi.org", 443, "non-public-address", "r1")),
            NOTHING),
        row(
            "adding an entry allows its recorded refusals, aggregated rows by their count",
            open(),
            open("pypi.org"),
            List.of(
                deny("pypi.org", 443, "not-allowed", "r1", 40, 0),
                deny("pypi.org", 443, "not-allowed", "r2"),
                deny("other.org", 443, "not-allowed", "r2")),
            allows(41, 2, 1)),
        row(
            "a refusal the current version already allows is not this change's",
            open("pypi.org"),
            open("pypi.org", "other.org"),
            List.of(
                deny("pypi.org", 443, "not-allowed", "r1"),
                deny("other.org", 443, "not-allowed", "r1")),
            allows(1, 1, 1)),
        row(
            "an entry does not allow a name that answered a private address",
            open("internal.example.com"),
            open("internal.example.com", "*.example.com"),
            List.of(deny("internal.example.com", 443, "non-public-address", "r1")),
            NOTHING),
        row(
            "widening the instance policy opens its refusals",
            scoped(List.of("pypi.org"), List.of()),
            open("pypi.org"),
            List.of(deny("pypi.org", 443, "instance-policy", "r1")),
            allows(1, 1, 1)),
        row(
            "a hostile row's host is decided as the proxy would and moves nothing",
            open("pypi.org"),
            open(),
            List.of(allow("[::1]", 443, "r1"), allow("evil.com/x", 443, "r1")),
            NOTHING),
        row(
            "a change that loosens and tightens counts both",
            open("old.example.com"),
            open("new.example.com"),
            List.of(
                allow("old.example.com", 443, "r1"),
                deny("new.example.com", 443, "not-allowed", "r1"),
                deny("new.example.com", 443, "not-allowed", "r2")),
            new Expect(2, 2, 1, 1, 1, 1, "not-allowed")));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void impact(
      String name,
      Optional<AgentEgress> before,
      Optional<AgentEgress> after,
      List<EgressObservation> observations,
      Expect expect) {
    AgentImpact impact = EgressImpact.of("planner", before, after, observations);
    ImpactSide opened = impact.wouldAllow();
    ImpactSide closed = impact.wouldRefuse();
    assertThat(List.of(opened.events(), (long) opened.runs(), (long) opened.hosts()))
        .as(name + ": would allow (refusals, runs, hosts)")
        .containsExactly(
            expect.allowEvents(), (long) expect.allowRuns(), (long) expect.allowHosts());
    assertThat(List.of(closed.events(), (long) closed.runs(), (long) closed.hosts()))
        .as(name + ": would refuse (connections, runs, hosts)")
        .containsExactly(
            expect.refuseEvents(), (long) expect.refuseRuns(), (long) expect.refuseHosts());
    if (expect.refusedAs() != null) {
      assertThat(closed.top().get(0).refusedAs()).containsExactly(expect.refusedAs());
    }
    assertThat(impact.none()).isEqualTo(expect.equals(NOTHING));
  }

  @Test
  void theRunsOfATighteningAreNamed() {
    AgentImpact impact =
        EgressImpact.of(
            "planner",
            open("api.vendor.com"),
            open(),
            List.of(
                allow("api.vendor.com", 443, "r-old", 1),
                allow("api.vendor.com", 443, "r-new", 7)));
    ImpactHost host = impact.wouldRefuse().top().get(0);
    assertThat(host.host()).isEqualTo("api.vendor.com");
    assertThat(host.port()).isEqualTo(443);
    assertThat(host.evidence().exampleRuns()).containsExactly("r-new", "r-old");
  }

  @Test
  void changedAgentsAreThoseWhoseListsDiffer() {
    AgentEgress same = lists(List.of("pypi.org"), OPEN);
    assertThat(
            EgressImpact.changedAgents(
                Map.of("kept", same, "edited", same, "removed", same),
                Map.of(
                    "kept",
                    lists(List.of("pypi.org"), OPEN),
                    "edited",
                    lists(List.of("pypi.org:443"), OPEN),
                    "added",
                    same)))
        .containsExactly("added", "edited", "removed");
  }
}
