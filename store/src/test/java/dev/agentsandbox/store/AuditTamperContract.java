package dev.agentsandbox.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.store.internal.AuditHash;
import java.time.Duration;
import java.util.List;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Tampering with the audit table, as someone with write access to the database would, and what
 * {@link AuditLog#verify()} reports. Shared by the SQLite test and the PostgreSQL IT; the
 * append-only triggers are bypassed first, as an attacker with DDL rights can.
 */
abstract class AuditTamperContract extends StoreTestBase {

  /** One way to tamper: the SQL (given the 5 untouched rows) and a problem verify must report. */
  record Tampering(String name, Function<List<AuditRow>, String> sql, String expectedProblem) {
    @Override
    public String toString() {
      return name;
    }
  }

  static Stream<Tampering> tamperings() {
    return Stream.of(
        new Tampering(
            "editing the data of row 3 names row 3 as edited",
            rows -> "UPDATE audit_log SET data = '{\"n\":99}' WHERE id = 3",
            "row 3: hash does not match the row's contents (edited)"),
        new Tampering(
            "editing the actor of row 3 names row 3 as edited",
            rows -> "UPDATE audit_log SET actor = 'someone-else' WHERE id = 3",
            "row 3: hash does not match"),
        new Tampering(
            "editing the time of row 3 names row 3 as edited",
            rows -> "UPDATE audit_log SET time_ms = time_ms + 1 WHERE id = 3",
            "row 3: hash does not match"),
        new Tampering(
            "editing the type of row 3 names row 3 as edited",
            rows -> "UPDATE audit_log SET type = 'agent_sandbox.teardown' WHERE id = 3",
            "row 3: hash does not match"),
        new Tampering(
            "clearing the agent of row 3 names row 3 as edited",
            rows -> "UPDATE audit_log SET agent = NULL WHERE id = 3",
            "row 3: hash does not match"),
        new Tampering(
            "rewriting row 3 with a recomputed hash is caught by row 4's link",
            AuditTamperContract::rewriteRow3WithValidHash,
            "row 4: prev_hash does not match the hash of row 3"),
        new Tampering(
            "deleting row 3 names the gap before row 4",
            rows -> "DELETE FROM audit_log WHERE id = 3",
            "row 3 is missing before row 4 (deleted)"),
        new Tampering(
            "deleting rows 2 and 3 names the gap before row 4",
            rows -> "DELETE FROM audit_log WHERE id IN (2, 3)",
            "rows 2..3 are missing before row 4 (deleted)"),
        new Tampering(
            "deleting the first row is caught by row 2's link to the chain start",
            rows -> "DELETE FROM audit_log WHERE id = 1",
            "row 1 is missing before row 2 (deleted)"),
        new Tampering(
            "deleting the newest row is caught by the chain head",
            rows -> "DELETE FROM audit_log WHERE id = 5",
            "row 5 is missing: the chain head records it"),
        new Tampering(
            "deleting every row is caught by the chain head",
            rows -> "DELETE FROM audit_log",
            "row 5 is missing: the chain head records it"),
        new Tampering(
            "renumbering the newest row names the gap it leaves",
            rows -> "UPDATE audit_log SET id = 6 WHERE id = 5",
            "row 5 is missing before row 6 (deleted)"),
        new Tampering(
            "editing the chain head's hash names the newest row",
            rows -> "UPDATE audit_head SET last_hash = '" + "a".repeat(64) + "'",
            "row 5: hash differs from the one the chain head recorded"),
        new Tampering(
            "deleting the chain head row is reported, not an error",
            rows -> "DELETE FROM audit_head",
            "the chain head row (audit_head) is missing"),
        new Tampering(
            "swapping the contents of rows 2 and 3 is caught at row 2",
            AuditTamperContract::swapRows2And3,
            "row 2: prev_hash does not match the hash of row 1"));
  }

  @BeforeEach
  void appendFiveRows() {
    for (int n = 1; n <= 5; n++) {
      clock.advance(Duration.ofSeconds(1));
      store
          .audit()
          .append(
              new AuditEvent(
                  "agent_sandbox.launch",
                  "admin",
                  "helper",
                  "run-" + n,
                  json("{\"n\":" + n + "}")));
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("tamperings")
  void verifyNamesTheTamperedRow(Tampering tampering) throws Exception {
    List<AuditRow> rows = store.audit().query(AuditQuery.all(10));
    assertThat(store.audit().verify().ok()).isTrue();

    fixture.executeBypassingAuditTriggers(tampering.sql().apply(rows));
    VerifyResult result = store.audit().verify();

    assertThat(result.ok()).isFalse();
    assertThat(result.problems())
        .anySatisfy(p -> assertThat(p).contains(tampering.expectedProblem()));
  }

  @Test
  void deletingTheNewestRowAndRewindingTheHeadIsCaughtOnlyByAnAnchor() throws Exception {
    AuditHead anchored = store.audit().head();
    AuditRow fourth = store.audit().query(new AuditQuery(null, null, null, null, 3L, 1)).get(0);

    fixture.executeBypassingAuditTriggers("DELETE FROM audit_log WHERE id = 5");
    fixture.execute(
        "UPDATE audit_head SET last_id = 4, last_hash = '" + fourth.hash() + "' WHERE id = 1");

    // The chain alone cannot tell a deleted tail from a log that ended there (docs/store.md).
    assertThat(store.audit().verify().ok()).isTrue();
    VerifyResult anchoredResult = store.audit().verify(anchored);
    assertThat(anchoredResult.ok()).isFalse();
    assertThat(anchoredResult.problems())
        .containsExactly(
            "row 5 is missing: the anchored head "
                + anchored
                + " names it (rows at the end were"
                + " deleted)");
  }

  @Test
  void anchorWithADifferentHashIsReported() {
    AuditHead head = store.audit().head();

    VerifyResult result = store.audit().verify(new AuditHead(head.id(), "f".repeat(64)));

    assertThat(result.ok()).isFalse();
    assertThat(result.problems()).singleElement().asString().startsWith("row 5: hash differs");
  }

  @Test
  void updateThroughSqlIsRefusedByTheTrigger() {
    assertThatThrownBy(() -> fixture.execute("UPDATE audit_log SET actor = 'x' WHERE id = 1"))
        .hasMessageContaining("append-only");
    assertThat(store.audit().verify().ok()).isTrue();
  }

  @Test
  void deleteThroughSqlIsRefusedByTheTrigger() {
    assertThatThrownBy(() -> fixture.execute("DELETE FROM audit_log WHERE id = 5"))
        .hasMessageContaining("append-only");
    assertThat(store.audit().verify().rowsChecked()).isEqualTo(5);
  }

  // --- verifying from a row verified before (what a timeline does) ---------------------------

  private AuditHead row(long id) {
    AuditRow row = store.audit().query(new AuditQuery(null, null, null, null, id - 1, 1)).get(0);
    return new AuditHead(row.id(), row.hash());
  }

  @Test
  void fromAVerifiedRowOnlyTheRowsAfterItAreWalked() {
    VerifyResult fromThird = store.audit().verifyFrom(row(3), null, List.of());
    assertThat(fromThird.ok()).as(fromThird.problems().toString()).isTrue();
    assertThat(fromThird.rowsChecked()).isEqualTo(2);
    VerifyResult fromHead = store.audit().verifyFrom(store.audit().head(), row(5), List.of(1L, 2L));
    assertThat(fromHead.ok()).as(fromHead.problems().toString()).isTrue();
    assertThat(fromHead.rowsChecked()).as("the two rechecked rows").isEqualTo(2);
  }

  static Stream<Tampering> tamperingsAfterRow2() {
    return tamperings()
        .filter(
            t ->
                t.name().contains("row 3")
                    || t.name().contains("newest")
                    || t.name().contains("chain head's hash"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("tamperingsAfterRow2")
  void aTamperingAfterTheVerifiedRowIsCaughtFromIt(Tampering tampering) throws Exception {
    AuditHead second = row(2);
    List<AuditRow> rows = store.audit().query(AuditQuery.all(10));
    fixture.executeBypassingAuditTriggers(tampering.sql().apply(rows));

    VerifyResult result = store.audit().verifyFrom(second, null, List.of());

    assertThat(result.ok()).isFalse();
    assertThat(result.problems())
        .anySatisfy(p -> assertThat(p).contains(tampering.expectedProblem()));
  }

  @Test
  void anEditBeforeTheVerifiedRowIsCaughtWhereThatRowIsRechecked() throws Exception {
    AuditHead second = row(2);
    fixture.executeBypassingAuditTriggers("UPDATE audit_log SET data = '{\"n\":99}' WHERE id = 1");

    assertThat(store.audit().verifyFrom(second, null, List.of()).ok())
        .as("row 1 is not read again unless asked: the bound on the work")
        .isTrue();
    VerifyResult rechecked = store.audit().verifyFrom(second, null, List.of(1L));
    assertThat(rechecked.problems())
        .containsExactly("row 1: hash does not match the row's contents (edited)");
    assertThat(store.audit().verify().ok()).as("a full verification sees it").isFalse();
  }

  @Test
  void aRecheckedRowRewrittenWithAValidHashIsCaughtByTheNextRowsLink() throws Exception {
    AuditHead head = store.audit().head();
    List<AuditRow> rows = store.audit().query(AuditQuery.all(10));
    fixture.executeBypassingAuditTriggers(rewriteRow3WithValidHash(rows));

    VerifyResult result = store.audit().verifyFrom(head, null, List.of(3L));

    assertThat(result.problems())
        .containsExactly("row 4: prev_hash does not match the hash of row 3 (a row was replaced)");
  }

  @Test
  void aVerifiedRowThatWasReplacedOrDeletedIsReported() throws Exception {
    AuditHead third = row(3);
    List<AuditRow> rows = store.audit().query(AuditQuery.all(10));
    fixture.executeBypassingAuditTriggers(rewriteRow3WithValidHash(rows));
    assertThat(store.audit().verifyFrom(third, null, List.of()).problems())
        .anySatisfy(p -> assertThat(p).startsWith("row 3: hash differs from the verified row"));

    fixture.executeBypassingAuditTriggers("DELETE FROM audit_log WHERE id = 3");
    assertThat(store.audit().verifyFrom(third, null, List.of()).problems())
        .anySatisfy(p -> assertThat(p).startsWith("row 3 is missing: the verified row"));
  }

  private static String rewriteRow3WithValidHash(List<AuditRow> rows) {
    AuditRow row = rows.get(2);
    String data = "{\"n\":99}";
    String hash =
        AuditHash.of(
            row.id(),
            row.time().toEpochMilli(),
            row.type(),
            row.actor(),
            row.agent(),
            row.runId(),
            data,
            row.prevHash());
    return "UPDATE audit_log SET data = '" + data + "', hash = '" + hash + "' WHERE id = 3";
  }

  private static String swapRows2And3(List<AuditRow> rows) {
    return "UPDATE audit_log SET id = -id WHERE id IN (2, 3);\n"
        + "UPDATE audit_log SET id = 3 WHERE id = -2;\n"
        + "UPDATE audit_log SET id = 2 WHERE id = -3";
  }
}
