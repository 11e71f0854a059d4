package dev.agentsandbox.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The steps of sessions: stored at start, updated at end, listed in order, paged. Both dialects.
 */
abstract class StepRepositoryContract extends StoreTestBase {

  @BeforeEach
  void session() {
    store.runs().insert(RunRepositoryContract.session("s1", START));
  }

  static StepRecord started(int step, Instant at) {
    return StepRecord.started(
        "s1", step, "admin", json("[\"pytest\", \"-q\"]"), "/workspace/app", false, 300, 12, at);
  }

  @Test
  void aStartedStepIsFoundRunningAndEqual() {
    StepRecord step = started(1, START.plusNanos(999_999));
    store.steps().insert(step);

    assertThat(store.steps().find("s1", 1)).contains(step);
    assertThat(step.running()).isTrue();
    assertThat(store.steps().find("s1", 2)).isEmpty();
    assertThat(store.steps().find("other", 1)).isEmpty();
  }

  @Test
  void anEndedStepKeepsItsEndAndItsTails() {
    StepRecord step = started(1, START);
    store.steps().insert(step);
    StepRecord ended =
        step.ended(
            START.plusSeconds(2), "exit", 1, 2317, 4211, "1 failed\n", "warn\n", true, 2, "");

    store.steps().update(ended);

    StepRecord read = store.steps().find("s1", 1).orElseThrow();
    assertThat(read).isEqualTo(ended);
    assertThat(read.running()).isFalse();
    assertThat(read.stdoutTail()).isEqualTo("1 failed\n");
    assertThat(read.egressDenied()).isEqualTo(2);
  }

  @Test
  void listingIsInOrderPagedAndWithoutTails() {
    for (int n = 3; n >= 1; n--) {
      store.steps().insert(started(n, START.plusSeconds(n)));
    }
    store
        .steps()
        .update(
            started(2, START.plusSeconds(2))
                .ended(START.plusSeconds(3), "timeout", 137, 1000, 5, "out", "err", false, 0, "t"));

    assertThat(store.steps().list("s1", 0, 10))
        .extracting(StepRecord::step, StepRecord::endReason, StepRecord::stdoutTail)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple(1, null, null),
            org.assertj.core.groups.Tuple.tuple(2, "timeout", null),
            org.assertj.core.groups.Tuple.tuple(3, null, null));
    assertThat(store.steps().list("s1", 1, 1)).extracting(StepRecord::step).containsExactly(2);
    assertThat(store.steps().count("s1")).isEqualTo(3);
    assertThat(store.steps().count("other")).isZero();
    assertThat(store.steps().running("s1")).extracting(StepRecord::step).containsExactly(1, 3);
  }

  @Test
  void aStepNumberIsStoredOnce() {
    store.steps().insert(started(1, START));

    assertThatThrownBy(() -> store.steps().insert(started(1, START)))
        .isInstanceOf(UnableToAccessStoreException.class)
        .hasMessageContaining("insert step 1 of run s1");
  }

  @Test
  void updatingAStepThatWasNeverStoredFails() {
    assertThatThrownBy(
            () ->
                store
                    .steps()
                    .update(started(9, START).ended(START, "exit", 0, 0, 0, "", "", false, 0, "")))
        .isInstanceOf(UnableToAccessStoreException.class)
        .hasMessageContaining("no step 9 of run s1");
  }

  @Test
  void anEndReasonOutsideTheClosedSetIsRefusedByTheSchema() {
    store.steps().insert(started(1, START));

    assertThatThrownBy(
            () ->
                store
                    .steps()
                    .update(
                        started(1, START)
                            .ended(START, "vanished", null, 0, 0, "", "", false, 0, "")))
        .isInstanceOf(UnableToAccessStoreException.class);
  }

  @Test
  void aHalfEndedRecordIsRefused() {
    assertThatThrownBy(
            () ->
                new StepRecord(
                    "s1",
                    1,
                    "admin",
                    json("[\"x\"]"),
                    "/workspace",
                    false,
                    1,
                    0,
                    START,
                    START,
                    null,
                    null,
                    0L,
                    0,
                    "",
                    "",
                    false,
                    0,
                    ""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("an ended step has an end time, a reason and a duration");
  }
}
