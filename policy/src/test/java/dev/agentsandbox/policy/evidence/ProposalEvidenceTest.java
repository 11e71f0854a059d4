package dev.agentsandbox.policy.evidence;

import static dev.agentsandbox.policy.evidence.Observations.T0;
import static dev.agentsandbox.policy.evidence.Observations.allow;
import static dev.agentsandbox.policy.evidence.Observations.config;
import static dev.agentsandbox.policy.evidence.Observations.deny;
import static dev.agentsandbox.policy.evidence.Observations.restricted;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.policy.config.EgressPolicy;
import dev.agentsandbox.policy.config.Loosening;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What each proposed entry carries as evidence, and the proposal's bounds. */
class ProposalEvidenceTest {
  @Test
  void anAgentWithNoRefusalsGetsAnEmptyProposal() {
    EgressProposal proposal =
        EgressProposer.propose(
            "planner",
            config(List.of("pypi.org")),
            EgressPolicy.DEFAULT,
            List.of(allow("pypi.org", 443, "r1")));
    assertThat(proposal.empty()).isTrue();
    assertThat(proposal.refusalsRead()).isZero();
    assertThat(proposal.notFixable()).isEmpty();
    assertThat(proposal.allowAfter().asStrings()).containsExactly("pypi.org");
    assertThat(proposal.loosenings()).isEmpty();
  }

  @Test
  void anUnconfiguredAgentIsRefused() {
    assertThatThrownBy(
            () ->
                EgressProposer.propose(
                    "stranger", config(List.of()), EgressPolicy.DEFAULT, List.of()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("stranger");
  }

  @Test
  void evidenceCountsAggregatedRowsByTheirCountAndRunsOnce() {
    EgressProposal proposal =
        EgressProposer.propose(
            "planner",
            config(List.of()),
            EgressPolicy.DEFAULT,
            List.of(
                deny("pypi.org", 443, "not-allowed", "r1", 1, 0),
                // an aggregated row: the first N in full, then one counted row (docs/api.md)
                deny("pypi.org", 443, "not-allowed", "r1", 250, 3),
                deny("pypi.org", 80, "not-allowed", "r2", 1, 9),
                deny("pypi.org", 443, "not-allowed", "r3", 2, 5)));
    assertThat(proposal.refusalsRead()).isEqualTo(254);
    ProposedEntry entry = proposal.entries().get(0);
    assertThat(entry.entry()).isEqualTo("pypi.org");
    assertThat(entry.ports()).containsExactly(80, 443);
    assertThat(entry.refusedAs()).containsExactly("not-allowed");
    Evidence evidence = entry.evidence();
    assertThat(evidence.count()).isEqualTo(254);
    assertThat(evidence.runs()).isEqualTo(3);
    assertThat(evidence.firstSeen()).isEqualTo(T0);
    assertThat(evidence.lastSeen()).isEqualTo(T0.plusSeconds(9 * 60));
    assertThat(evidence.exampleRuns())
        .as("the most recent first")
        .containsExactly("r2", "r3", "r1");
    assertThat(entry.blockedByInstancePolicy()).isFalse();
  }

  @Test
  void aWildcardCarriesEveryNameItCoversAndTheirEvidence() {
    EgressProposal proposal =
        EgressProposer.propose(
            "planner",
            config(List.of()),
            EgressPolicy.DEFAULT,
            List.of(
                deny("a.example.com", 443, "not-allowed", "r1"),
                deny("b.example.com", 443, "not-allowed", "r2"),
                deny("c.example.com", 443, "not-allowed", "r2"),
                deny("c.example.com", 443, "not-allowed", "r3")));
    ProposedEntry entry = proposal.entries().get(0);
    assertThat(entry.entry()).isEqualTo("*.example.com");
    assertThat(entry.hosts()).containsExactly("a.example.com", "b.example.com", "c.example.com");
    assertThat(entry.evidence().count()).isEqualTo(4);
    assertThat(entry.evidence().runs()).isEqualTo(3);
    assertThat(proposal.loosenings())
        .extracting(Loosening::kind)
        .containsExactly(Loosening.Kind.ALLOW_ENTRY_ADDED);
  }

  @Test
  void entriesTheInstancePolicyWouldStillBlockAreFlagged() {
    EgressProposal proposal =
        EgressProposer.propose(
            "planner",
            config(List.of()),
            restricted(List.of("*.pythonhosted.org")),
            List.of(
                deny("pypi.org", 443, "not-allowed", "r1"),
                deny("files.pythonhosted.org", 443, "not-allowed", "r1")));
    assertThat(proposal.entries())
        .filteredOn(e -> e.entry().equals("pypi.org"))
        .singleElement()
        .satisfies(e -> assertThat(e.instancePolicyBlocks()).containsExactly("pypi.org:443"));
    assertThat(proposal.entries())
        .filteredOn(e -> e.entry().equals("files.pythonhosted.org"))
        .singleElement()
        .satisfies(e -> assertThat(e.blockedByInstancePolicy()).isFalse());
  }

  @Test
  void entriesAreOrderedByRunsThenRefusals() {
    EgressProposal proposal =
        EgressProposer.propose(
            "planner",
            config(List.of()),
            EgressPolicy.DEFAULT,
            List.of(
                deny("rare.example.org", 443, "not-allowed", "r1", 90, 0),
                deny("common.example.net", 443, "not-allowed", "r1"),
                deny("common.example.net", 443, "not-allowed", "r2"),
                deny("tie.example.io", 443, "not-allowed", "r1")));
    assertThat(proposal.entries())
        .extracting(ProposedEntry::entry)
        .containsExactly("common.example.net", "rare.example.org", "tie.example.io");
  }

  @Test
  void aFloodOfDistinctOwnersIsBoundedWithTheRestCounted() {
    List<EgressObservation> flood = new ArrayList<>();
    for (int i = 0; i < EgressProposer.MAX_ENTRIES + 25; i++) {
      flood.add(deny("owner" + i + ".com", 443, "not-allowed", "r1"));
    }
    EgressProposal proposal =
        EgressProposer.propose("planner", config(List.of()), EgressPolicy.DEFAULT, flood);
    assertThat(proposal.entries()).hasSize(EgressProposer.MAX_ENTRIES);
    assertThat(proposal.entriesLeftOut()).isEqualTo(25);
    assertThat(proposal.allowAfter().entries()).hasSize(EgressProposer.MAX_ENTRIES);
  }

  @Test
  void aFloodOfNamesUnderOneDomainCollapsesIntoOneWildcard() {
    List<EgressObservation> flood = new ArrayList<>();
    for (int i = 0; i < 5000; i++) {
      flood.add(deny("x" + i + ".exfil.example", 443, "not-allowed", "r1"));
    }
    EgressProposal proposal =
        EgressProposer.propose("planner", config(List.of()), EgressPolicy.DEFAULT, flood);
    assertThat(proposal.entries())
        .extracting(ProposedEntry::entry)
        .containsExactly("*.exfil.example");
    ProposedEntry entry = proposal.entries().get(0);
    assertThat(entry.hosts()).hasSize(ProposedEntry.MAX_HOSTS);
    assertThat(entry.hostsLeftOut()).isEqualTo(5000 - ProposedEntry.MAX_HOSTS);
  }
}
