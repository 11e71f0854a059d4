package dev.agentsandbox.policy.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Collections;
import java.util.List;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class AgentGrantTest {
  private static final AgentGrant HELPER_PLANNER = AgentGrant.only(List.of("planner", "helper"));

  static Stream<Arguments> permits() {
    return Stream.of(
        Arguments.of("a named agent is permitted", HELPER_PLANNER, "helper", true),
        Arguments.of("the other named agent is permitted", HELPER_PLANNER, "planner", true),
        Arguments.of("an agent not named is not", HELPER_PLANNER, "builder", false),
        Arguments.of("a prefix of a named agent is not", HELPER_PLANNER, "help", false),
        Arguments.of("a name extending a named agent is not", HELPER_PLANNER, "helper2", false),
        Arguments.of("the upper-case spelling is not", HELPER_PLANNER, "HELPER", false),
        Arguments.of("a name with a trailing space is not", HELPER_PLANNER, "helper ", false),
        Arguments.of("two names run together are not", HELPER_PLANNER, "helper planner", false),
        Arguments.of("no agent at all is not", HELPER_PLANNER, null, false),
        Arguments.of("the empty name is not", HELPER_PLANNER, "", false),
        Arguments.of("every agent permits any name", AgentGrant.EVERY, "builder", true));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource
  void permits(String name, AgentGrant grant, String agent, boolean permitted) {
    assertThat(grant.permits(agent)).as(name).isEqualTo(permitted);
  }

  static Stream<Arguments> refusedLists() {
    return Stream.of(
        Arguments.of("no agents", List.of(), "at least one agent"),
        Arguments.of("an upper-case name", List.of("Helper"), "'Helper' is not an agent name"),
        Arguments.of("a leading hyphen", List.of("-helper"), "'-helper' is not an agent name"),
        Arguments.of("a comma inside", List.of("a,b"), "'a,b' is not an agent name"),
        Arguments.of("a space inside", List.of("a b"), "'a b' is not an agent name"),
        Arguments.of("the wildcard", List.of("*"), "'*' is not an agent name"),
        Arguments.of("an empty name", List.of(""), "'' is not an agent name"),
        Arguments.of("a name over 63", List.of("a".repeat(64)), "is not an agent name"),
        Arguments.of(
            "more than the most",
            IntStream.range(0, AgentGrant.MAX_AGENTS + 1).mapToObj(i -> "a" + i).toList(),
            "at most 64 agents"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource
  void refusedLists(String name, List<String> agents, String problem) {
    assertThat(AgentGrant.problems(agents))
        .as(name)
        .anySatisfy(p -> assertThat(p).contains(problem));
    assertThatThrownBy(() -> AgentGrant.only(agents)).as(name).hasMessageContaining(problem);
  }

  @Test
  void everyProblemOfAListIsNamed() {
    assertThat(AgentGrant.problems(List.of("ok", "Bad", "also bad"))).hasSize(2);
  }

  @Test
  void theStoredFormRoundTripsAndOnlyNullIsEveryAgent() {
    assertThat(HELPER_PLANNER.storedForm()).isEqualTo("helper planner");
    assertThat(AgentGrant.fromStoredForm("helper planner")).isEqualTo(HELPER_PLANNER);
    assertThat(AgentGrant.EVERY.storedForm()).isNull();
    assertThat(AgentGrant.fromStoredForm(null)).isEqualTo(AgentGrant.EVERY);
    // A damaged form is refused rather than read as "every agent".
    assertThatThrownBy(() -> AgentGrant.fromStoredForm("")).hasMessageContaining("agent name");
    assertThatThrownBy(() -> AgentGrant.fromStoredForm("helper  planner"))
        .hasMessageContaining("agent name");
  }

  @Test
  void aGrantIsSortedAndCannotBeChanged() {
    assertThat(HELPER_PLANNER.named()).containsExactly("helper", "planner");
    assertThat(HELPER_PLANNER.limited()).isTrue();
    assertThat(AgentGrant.EVERY.limited()).isFalse();
    assertThat(AgentGrant.EVERY.named()).isEqualTo(Collections.emptySortedSet());
    assertThatThrownBy(() -> HELPER_PLANNER.named().add("builder"))
        .isInstanceOf(UnsupportedOperationException.class);
  }
}
