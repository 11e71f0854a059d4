package dev.agentsandbox.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.groups.Tuple.tuple;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Run records: insert, update through their states, list active and recent. Both dialects. */
abstract class RunRepositoryContract extends StoreTestBase {

  static RunRecord pending(String runId, Instant createdAt) {
    return new RunRecord(
        runId,
        "helper",
        "docker",
        null,
        RunStatus.PENDING,
        json("[\"python\", \"job.py\"]"),
        createdAt,
        null,
        null,
        null,
        null,
        null,
        createdAt.plus(Duration.ofMinutes(10)),
        "ci");
  }

  @Test
  void insertedRunIsFoundEqual() {
    RunRecord run = pending("run-1", START);

    store.runs().insert(run);

    assertThat(store.runs().find("run-1")).contains(run);
    assertThat(store.runs().find("run-2")).isEmpty();
  }

  @Test
  void timesAreKeptToTheMillisecondAndReadBackEqual() {
    RunRecord run = pending("run-1", START.plusNanos(456_789));

    store.runs().insert(run);

    assertThat(run.createdAt()).isEqualTo(START);
    assertThat(store.runs().find("run-1")).contains(run);
  }

  @Test
  void updateReplacesEveryField() {
    store.runs().insert(pending("run-1", START));
    RunRecord ended =
        new RunRecord(
            "run-1",
            "helper",
            "docker",
            "runsc",
            RunStatus.EXITED,
            json("[\"python\", \"job.py\"]"),
            START,
            START.plusSeconds(1),
            START.plusSeconds(9),
            0,
            "exited",
            "done\n",
            START.plus(Duration.ofMinutes(10)),
            "ci");

    store.runs().update(ended);

    assertThat(store.runs().find("run-1")).contains(ended);
  }

  @Test
  void updatingAnUnknownRunFails() {
    assertThatThrownBy(() -> store.runs().update(pending("ghost", START)))
        .isInstanceOf(UnableToAccessStoreException.class)
        .hasMessageContaining("update run ghost")
        .hasMessageContaining("no run with id ghost");
  }

  @Test
  void duplicateRunIdIsRefused() {
    store.runs().insert(pending("run-1", START));

    assertThatThrownBy(() -> store.runs().insert(pending("run-1", START)))
        .isInstanceOf(UnableToAccessStoreException.class)
        .hasMessageContaining("insert run run-1");
  }

  @Test
  void activeListsPendingAndRunningOldestFirst() {
    store.runs().insert(pending("run-b", START.plusSeconds(2)));
    store.runs().insert(pending("run-a", START.plusSeconds(1)));
    store.runs().insert(pending("run-c", START.plusSeconds(3)));
    RunRecord a = store.runs().find("run-a").orElseThrow();
    store.runs().update(withStatus(a, "running"));
    store.runs().update(withStatus(store.runs().find("run-c").orElseThrow(), "killed"));

    assertThat(store.runs().active())
        .extracting(RunRecord::runId, RunRecord::status)
        .containsExactly(tuple("run-a", RunStatus.RUNNING), tuple("run-b", RunStatus.PENDING));
  }

  @Test
  void recentListsNewestFirstUpToTheLimit() {
    for (int n = 1; n <= 5; n++) {
      store.runs().insert(pending("run-" + n, START.plusSeconds(n)));
    }

    assertThat(store.runs().recent(3))
        .extracting(RunRecord::runId)
        .containsExactly("run-5", "run-4", "run-3");
  }

  @Test
  void recentFiltersByAgentStatusAndCreationTimeTogether() {
    for (int n = 1; n <= 4; n++) {
      store.runs().insert(pending("run-" + n, START.plusSeconds(n)));
    }
    RunRecord other = pending("run-5", START.plusSeconds(5));
    store
        .runs()
        .insert(
            new RunRecord(
                other.runId(),
                "builder",
                other.backend(),
                other.runtime(),
                other.status(),
                other.command(),
                other.createdAt(),
                null,
                null,
                null,
                null,
                null,
                other.expiresAt(),
                other.owner()));
    store.runs().update(withStatus(store.runs().find("run-2").orElseThrow(), "running"));
    store.runs().update(withStatus(store.runs().find("run-4").orElseThrow(), "running"));

    assertThat(store.runs().recent("helper", null, null, 10))
        .extracting(RunRecord::runId)
        .containsExactly("run-4", "run-3", "run-2", "run-1");
    assertThat(store.runs().recent("builder", null, null, 10))
        .extracting(RunRecord::runId)
        .containsExactly("run-5");
    assertThat(store.runs().recent(null, RunStatus.RUNNING, null, 10))
        .extracting(RunRecord::runId)
        .containsExactly("run-4", "run-2");
    assertThat(store.runs().recent(null, null, START.plusSeconds(3), 10))
        .extracting(RunRecord::runId)
        .containsExactly("run-5", "run-4", "run-3");
    assertThat(store.runs().recent("helper", RunStatus.RUNNING, START.plusSeconds(3), 10))
        .extracting(RunRecord::runId)
        .containsExactly("run-4");
    assertThat(store.runs().recent("nobody", null, null, 10)).isEmpty();
    // A token limited to agents lists only theirs, the limit counting only theirs.
    assertThat(store.runs().recentAmong(Set.of("builder", "nobody"), null, null, Map.of(), 10))
        .extracting(RunRecord::runId)
        .containsExactly("run-5");
    assertThat(store.runs().recentAmong(Set.of("helper", "builder"), null, null, Map.of(), 2))
        .extracting(RunRecord::runId)
        .containsExactly("run-5", "run-4");
    assertThat(store.runs().recentAmong(Set.of(), null, null, Map.of(), 10))
        .as("no agents match no runs")
        .isEmpty();
  }

  @Test
  void recentFiltersByLabelsKeepingOnlyRunsThatCarryEveryOne() {
    store.runs().insert(pending("run-1", START.plusSeconds(1)), Map.of("owner", "alice"));
    store
        .runs()
        .insert(
            pending("run-2", START.plusSeconds(2)), Map.of("owner", "alice", "task-ref", "T-1"));
    store.runs().insert(pending("run-3", START.plusSeconds(3)), Map.of("owner", "bob"));
    store.runs().insert(pending("run-4", START.plusSeconds(4)));

    assertThat(store.runs().recent(null, null, null, Map.of("owner", "alice"), 10))
        .extracting(RunRecord::runId)
        .containsExactly("run-2", "run-1");
    assertThat(
            store.runs().recent(null, null, null, Map.of("owner", "alice", "task-ref", "T-1"), 10))
        .extracting(RunRecord::runId)
        .containsExactly("run-2");
    assertThat(store.runs().recent(null, null, null, Map.of("task-ref", "T-1", "owner", "bob"), 10))
        .as("every label must match, not any")
        .isEmpty();
    assertThat(store.runs().recent(null, null, null, Map.of("owner", "alic"), 10))
        .as("values match whole")
        .isEmpty();
    assertThat(
            store.runs().recent("helper", null, START.plusSeconds(2), Map.of("owner", "alice"), 10))
        .extracting(RunRecord::runId)
        .containsExactly("run-2");
    assertThat(store.runs().recent(null, null, null, Map.of(), 10)).hasSize(4);
  }

  static RunRecord session(String runId, Instant createdAt) {
    RunRecord run = pending(runId, createdAt);
    return new RunRecord(
        run.runId(),
        run.agent(),
        run.backend(),
        null,
        RunStatus.PENDING,
        com.fasterxml.jackson.databind.node.NullNode.getInstance(),
        run.createdAt(),
        null,
        null,
        null,
        null,
        null,
        run.expiresAt(),
        run.owner(),
        RunKind.SESSION,
        600);
  }

  @Test
  void aSessionKeepsItsKindItsIdleTimeAndItsNullCommandThroughItsStates() {
    RunRecord open = session("s-1", START);
    store.runs().insert(open);
    RunRecord closed =
        open.started("runsc", START.plusSeconds(1))
            .ended(RunStatus.CLOSED, START.plusSeconds(60), null, "idle", "steps' output\n");

    store.runs().update(closed);

    RunRecord read = store.runs().find("s-1").orElseThrow();
    assertThat(read).isEqualTo(closed);
    assertThat(read.kind()).isEqualTo(RunKind.SESSION);
    assertThat(read.idleSeconds()).isEqualTo(600);
    assertThat(read.command().isNull()).isTrue();
    assertThat(read.status()).isEqualTo(RunStatus.CLOSED);
    assertThat(read.status().active()).isFalse();
    assertThat(store.runs().find("run-x")).isEmpty();
  }

  @Test
  void recentFiltersByKind() {
    store.runs().insert(pending("run-1", START.plusSeconds(1)));
    store.runs().insert(session("ses-2", START.plusSeconds(2)));
    store.runs().insert(pending("run-3", START.plusSeconds(3)));

    assertThat(store.runs().recent(null, null, RunKind.SESSION, null, Map.of(), 10))
        .extracting(RunRecord::runId)
        .containsExactly("ses-2");
    assertThat(store.runs().recent(null, null, RunKind.RUN, null, Map.of(), 10))
        .extracting(RunRecord::runId)
        .containsExactly("run-3", "run-1");
    assertThat(store.runs().recent(null, null, null, null, Map.of(), 10)).hasSize(3);
  }

  @Test
  void aRunHasNoIdleTimeAndASessionNeedsOne() {
    RunRecord run = pending("run-1", START);
    assertThatThrownBy(
            () ->
                new RunRecord(
                    run.runId(),
                    run.agent(),
                    run.backend(),
                    null,
                    run.status(),
                    run.command(),
                    run.createdAt(),
                    null,
                    null,
                    null,
                    null,
                    null,
                    run.expiresAt(),
                    run.owner(),
                    RunKind.RUN,
                    60))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(
            () ->
                new RunRecord(
                    run.runId(),
                    run.agent(),
                    run.backend(),
                    null,
                    run.status(),
                    run.command(),
                    run.createdAt(),
                    null,
                    null,
                    null,
                    null,
                    null,
                    run.expiresAt(),
                    run.owner(),
                    RunKind.SESSION,
                    null))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void unknownStatusIsRefusedByTheRecord() {
    assertThatThrownBy(() -> withStatus(pending("run-1", START), "paused"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("run status paused is not one of");
  }

  static RunRecord withStatus(RunRecord run, String status) {
    return new RunRecord(
        run.runId(),
        run.agent(),
        run.backend(),
        run.runtime(),
        RunStatus.fromWireName(status),
        run.command(),
        run.createdAt(),
        run.startedAt(),
        run.endedAt(),
        run.exitStatus(),
        run.endReason(),
        run.outputTail(),
        run.expiresAt(),
        run.owner());
  }

  @Test
  void labelsAreKeptWithTheRunAndCopiedIntoEveryAuditRowOfIt() {
    java.util.Map<String, String> labels =
        java.util.Map.of("owner", "alice", "example.com/task", "T-42");
    store.runs().insert(pending("r1", START), labels);
    store.runs().insert(pending("r2", START));

    assertThat(store.runs().labels("r1")).containsExactlyEntriesOf(new java.util.TreeMap<>(labels));
    assertThat(store.runs().labels("r2")).isEmpty();

    store.audit().append(new AuditEvent("agent_sandbox.launch", "ci", "helper", "r1", null));
    store.audit().append(new AuditEvent("agent_sandbox.exit", "ci", "helper", "r2", null));
    store.audit().append(new AuditEvent("agent_sandbox.config.update", "ci", null, null, null));

    java.util.List<AuditRow> rows = store.audit().query(AuditQuery.all(10));
    assertThat(rows.get(0).data().get("labels").get("owner").asText()).isEqualTo("alice");
    assertThat(rows.get(0).data().get("labels").get("example.com/task").asText()).isEqualTo("T-42");
    assertThat(rows.get(1).data().has("labels")).isFalse();
    assertThat(rows.get(2).data().has("labels")).isFalse();
    // the labels are inside what the chain's hashes cover
    assertThat(store.audit().verify().ok()).isTrue();
  }

  @Test
  void auditQueriesFilterByEveryLabelGiven() {
    store.runs().insert(pending("r1", START), java.util.Map.of("owner", "alice", "env", "ci"));
    store.runs().insert(pending("r2", START), java.util.Map.of("owner", "bob", "env", "ci"));
    for (String run : java.util.List.of("r1", "r2", "r1")) {
      store.audit().append(new AuditEvent("agent_sandbox.launch", "ci", "helper", run, null));
    }

    assertThat(
            store
                .audit()
                .query(AuditQuery.all(10).withLabels(java.util.Map.of("owner", "alice")))
                .stream()
                .map(AuditRow::runId))
        .containsExactly("r1", "r1");
    assertThat(store.audit().query(AuditQuery.all(10).withLabels(java.util.Map.of("env", "ci"))))
        .hasSize(3);
    assertThat(
            store
                .audit()
                .query(
                    AuditQuery.all(10).withLabels(java.util.Map.of("env", "ci", "owner", "carol"))))
        .isEmpty();
    // a value that looks like SQL is only ever a bound parameter
    assertThat(
            store
                .audit()
                .query(AuditQuery.all(10).withLabels(java.util.Map.of("owner", "' OR '1'='1"))))
        .isEmpty();
  }
}
