package dev.agentsandbox.backend.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.EnumSet;
import java.util.OptionalInt;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The wait's transition table, row by row: what each state may become, and nothing else. */
class WaitStateTest {
  static Stream<Arguments> table() {
    return Stream.of(
        row(
            "watching ends on the workload, the proxy or the deadline",
            WaitState.WATCHING,
            EnumSet.of(
                WaitState.WORKLOAD_STOPPED, WaitState.PROXY_STOPPED, WaitState.DEADLINE_PASSED)),
        row(
            "a proxy that stopped first died under the workload, or both stopped, or nobody says",
            WaitState.PROXY_STOPPED,
            EnumSet.of(WaitState.PROXY_DIED, WaitState.WORKLOAD_STOPPED, WaitState.LOST)),
        row(
            "a stopped workload exited, or was stopped from outside with its proxy",
            WaitState.WORKLOAD_STOPPED,
            EnumSet.of(WaitState.EXITED, WaitState.STOPPED_FROM_OUTSIDE)),
        row("an exit is an end", WaitState.EXITED, EnumSet.noneOf(WaitState.class)),
        row(
            "a stop from outside is an end",
            WaitState.STOPPED_FROM_OUTSIDE,
            EnumSet.noneOf(WaitState.class)),
        row("a dead proxy is an end", WaitState.PROXY_DIED, EnumSet.noneOf(WaitState.class)),
        row("the deadline is an end", WaitState.DEADLINE_PASSED, EnumSet.noneOf(WaitState.class)),
        row("a lost wait is an end", WaitState.LOST, EnumSet.noneOf(WaitState.class)));
  }

  private static Arguments row(String name, WaitState from, Set<WaitState> to) {
    return Arguments.of(name, from, to);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("table")
  void eachStateMovesOnlyWhereTheTableSays(String name, WaitState from, Set<WaitState> to) {
    assertThat(from.successors()).as(name).isEqualTo(to);
    assertThat(from.ended()).as(name + ": ended").isEqualTo(to.isEmpty());
  }

  @Test
  void everyStateHasARow() {
    assertThat(table().map(a -> (WaitState) a.get()[1]))
        .containsExactlyInAnyOrder(WaitState.values());
  }

  @Test
  void everyEndIsReachedFromWatching() {
    Set<WaitState> reached = EnumSet.of(WaitState.WATCHING);
    for (int i = 0; i < WaitState.values().length; i++) {
      for (WaitState state : EnumSet.copyOf(reached)) {
        reached.addAll(state.successors());
      }
    }
    assertThat(reached).containsExactlyInAnyOrder(WaitState.values());
  }

  @Test
  void onlyTheEndsThatFindTheWorkloadRunningStopIt() {
    for (WaitState state : WaitState.values()) {
      assertThat(state.stopsTheWorkload())
          .as(state.toString())
          .isEqualTo(state == WaitState.PROXY_DIED || state == WaitState.DEADLINE_PASSED);
    }
  }

  @Test
  void aTrackerRefusesAMoveTheTableDoesNotHave() {
    WaitState.Tracker wait = new WaitState.Tracker();
    assertThatThrownBy(() -> wait.moveTo(WaitState.EXITED))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("a wait cannot move from WATCHING to EXITED");
    assertThat(wait.moveTo(WaitState.WORKLOAD_STOPPED).moveTo(WaitState.EXITED).state())
        .isEqualTo(WaitState.EXITED);
    assertThatThrownBy(() -> wait.moveTo(WaitState.WATCHING))
        .isInstanceOf(IllegalStateException.class);
  }

  @Test
  void anOutcomeIsAlwaysAnEnd() {
    assertThatThrownBy(() -> new WaitState.Outcome(WaitState.PROXY_STOPPED, OptionalInt.empty()))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(new WaitState.Outcome(WaitState.EXITED, OptionalInt.of(0)).status()).hasValue(0);
  }
}
