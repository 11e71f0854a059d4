package dev.agentsandbox.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.store.internal.AuditHash;
import dev.agentsandbox.store.internal.CanonicalJson;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;

/**
 * The egress index on both dialects: written with each egress row in its transaction, read as
 * tallies, append-only, invisible to {@code verify}, and backfilled by the migration exactly as an
 * append would have written it.
 */
abstract class EgressIndexContract extends StoreTestBase {
  static final String DENY = "agent_sandbox.egress.deny";
  static final String ALLOW = "agent_sandbox.egress.allow";

  /** Egress rows of every shape the index must survive, and rows that are no egress rows. */
  static List<AuditEvent> mixedRows() {
    return List.of(
        event(
            DENY,
            "planner",
            "r1",
            "{\"host\":\"pypi.org\",\"port\":443,\"reason\":\"not-allowed\"}"),
        event(
            DENY,
            "planner",
            "r1",
            "{\"host\":\"pypi.org\",\"port\":443,\"reason\":\"not-allowed\"}"),
        event(
            DENY,
            "planner",
            "r1",
            "{\"host\":\"pypi.org\",\"port\":443,\"reason\":\"not-allowed\",\"count\":40}"),
        event(
            DENY,
            "planner",
            "r2",
            "{\"host\":\"pypi.org\",\"port\":443,\"reason\":\"not-allowed\"}"),
        event(
            ALLOW,
            "planner",
            "r2",
            "{\"host\":\"files.example.com\",\"port\":443,\"reason\":\"allowed\",\"first\":true}"),
        event(
            DENY, "other", "r3", "{\"host\":\"pypi.org\",\"port\":443,\"reason\":\"not-allowed\"}"),
        event(
            "agent_sandbox.launch",
            "planner",
            "r1",
            "{\"host\":\"launch.example.com\",\"port\":443}"),
        event(
            DENY,
            "planner",
            "r4",
            "{\"host\":\"a\\u0000b.example.com\",\"port\":\"443\",\"reason\":\"not-allowed\",\"count\":-3}"),
        event(
            DENY,
            "planner",
            "r4",
            "{\"host\":\"bücher.example\",\"port\":443.0,\"reason\":\"" + "x".repeat(80) + "\"}"),
        event(
            DENY,
            "planner",
            "r4",
            "{\"host\":\""
                + "a".repeat(254)
                + "\",\"port\":70000,\"reason\":\"ip-literal\",\"count\":2.5}"),
        event(DENY, "planner", "r4", "{\"host\":[\"x\"],\"reason\":null}"),
        event(
            DENY,
            "planner",
            null,
            "{\"host\":\"PyPI.org\",\"port\":80,\"reason\":\"not-allowed\"}"));
  }

  static AuditEvent event(String type, String agent, String run, String data) {
    return new AuditEvent(type, "proxy", agent, run, json(data));
  }

  /** The scanned entries summed per decision, host, port, reason and run, as callers tally them. */
  List<EgressTally> tallies(String agent, Instant since, EgressIndex.Decisions which) {
    java.util.Map<List<Object>, EgressTally> summed = new java.util.LinkedHashMap<>();
    store
        .egress()
        .scan(
            agent,
            since,
            which,
            e ->
                summed.merge(
                    java.util.Arrays.asList(
                        e.decision(), e.host(), e.port(), e.reason(), e.runId()),
                    e,
                    (a, b) ->
                        new EgressTally(
                            a.agent(),
                            a.decision(),
                            a.host(),
                            a.port(),
                            a.reason(),
                            a.runId(),
                            a.count() + b.count(),
                            a.first().isBefore(b.first()) ? a.first() : b.first(),
                            a.last().isAfter(b.last()) ? a.last() : b.last())));
    List<EgressTally> found = new ArrayList<>(summed.values());
    found.sort(
        java.util.Comparator.comparing(EgressTally::decision)
            .thenComparing(EgressTally::host)
            .thenComparing(t -> String.valueOf(t.runId())));
    return found;
  }

  @Test
  void egressRowsAreScannedOneEntryPerRow() {
    for (AuditEvent event : mixedRows()) {
      clock.advance(Duration.ofSeconds(1));
      store.audit().append(event);
    }
    List<EgressTally> planner = new ArrayList<>();
    long streamed = store.egress().scan("planner", START, EgressIndex.Decisions.BOTH, planner::add);
    assertThat(streamed)
        .isEqualTo(planner.size())
        .as("one per egress row of planner")
        .isEqualTo(10);
    assertThat(planner).allMatch(e -> e.first().equals(e.last()));
    assertThat(planner)
        .filteredOn(e -> e.count() == 40)
        .singleElement()
        .satisfies(e -> assertThat(e.first()).isEqualTo(START.plusSeconds(3)));
    List<EgressTally> denies = tallies("planner", START, EgressIndex.Decisions.DENY);
    assertThat(denies)
        .filteredOn(t -> t.host().equals("pypi.org"))
        .extracting(EgressTally::runId, EgressTally::count)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple("r1", 42L),
            org.assertj.core.groups.Tuple.tuple("r2", 1L));
    EgressTally r1 = denies.stream().filter(t -> "r1".equals(t.runId())).findFirst().orElseThrow();
    assertThat(r1.first()).isEqualTo(START.plusSeconds(1));
    assertThat(r1.last()).isEqualTo(START.plusSeconds(3));
    assertThat(r1.port()).isEqualTo(443);
    assertThat(r1.reason()).isEqualTo("not-allowed");
    assertThat(tallies("planner", START, EgressIndex.Decisions.ALLOW))
        .extracting(EgressTally::host, EgressTally::runId)
        .containsExactly(org.assertj.core.groups.Tuple.tuple("files.example.com", "r2"));
    assertThat(tallies("planner", START, EgressIndex.Decisions.BOTH))
        .as("no row of another agent, no launch row")
        .noneMatch(t -> t.host().equals("launch.example.com") || "r3".equals(t.runId()));
    assertThat(tallies("planner", START.plusSeconds(4), EgressIndex.Decisions.DENY))
        .as("since excludes the earlier rows")
        .noneMatch(t -> "r1".equals(t.runId()));
    assertThat(tallies("nobody", START, EgressIndex.Decisions.BOTH)).isEmpty();
  }

  @Test
  void hostileFieldsAreIndexedBounded() {
    for (AuditEvent event : mixedRows()) {
      store.audit().append(event);
    }
    List<EgressTally> r4 =
        tallies("planner", START, EgressIndex.Decisions.DENY).stream()
            .filter(t -> "r4".equals(t.runId()))
            .toList();
    assertThat(r4)
        .as("every hostile host is indexed as the empty string")
        .allMatch(t -> t.host().isEmpty());
    assertThat(r4.stream().mapToInt(EgressTally::port).sum()).as("no port kept").isZero();
    assertThat(r4.stream().mapToLong(EgressTally::count).sum())
        .as("counts that are not whole numbers of at least 1 count 1")
        .isEqualTo(4);
    assertThat(tallies("planner", START, EgressIndex.Decisions.DENY))
        .filteredOn(t -> t.runId() == null)
        .extracting(EgressTally::host)
        .as("printable hosts are kept as recorded; judging them is the reader's job")
        .containsExactly("PyPI.org");
  }

  @Test
  void theIndexCommitsWithItsRowOrNotAtAll() throws Exception {
    fixture.refuseAuditInsertsBy("refused");
    AuditEvent refused =
        new AuditEvent(
            DENY,
            "refused",
            "planner",
            "r9",
            json("{\"host\":\"x.org\",\"port\":443,\"reason\":\"not-allowed\"}"));
    assertThatThrownBy(() -> store.audit().appendAll(List.of(mixedRows().get(0), refused)))
        .isInstanceOf(UnableToAccessStoreException.class);
    assertThat(fixture.queryValues("SELECT COUNT(*) FROM audit_egress")).containsExactly("0");
  }

  @Test
  void theIndexIsAppendOnlyAndVerifyNeverReadsIt() throws Exception {
    for (AuditEvent event : mixedRows()) {
      store.audit().append(event);
    }
    assertThatThrownBy(() -> fixture.execute("UPDATE audit_egress SET host = 'evil.com'"))
        .hasMessageContaining("append-only");
    assertThatThrownBy(() -> fixture.execute("DELETE FROM audit_egress"))
        .hasMessageContaining("append-only");
    VerifyResult result = store.audit().verify();
    assertThat(result.ok()).as(result.problems().toString()).isTrue();
    assertThat(result.rowsChecked()).isEqualTo(mixedRows().size());
  }

  @Test
  void theBackfillIndexesOlderRowsExactlyAsAnAppendWould() throws Exception {
    try (StoreFixture older = newFixture()) {
      if (older.url().startsWith("jdbc:sqlite:")) {
        java.nio.file.Files.createDirectories(
            java.nio.file.Path.of(older.url().substring("jdbc:sqlite:".length())).getParent());
      }
      Flyway.configure()
          .dataSource(older.url(), null, null)
          .locations("classpath:db/migration/" + store.dialect())
          .target("3")
          .load()
          .migrate();
      List<AuditEvent> rows = mixedRows();
      try (Connection connection = older.connect()) {
        insertChained(connection, rows);
      }
      try (Store migrated = Store.open(older.url(), clock)) {
        assertThat(older.queryValues("SELECT COUNT(*) FROM audit_egress"))
            .containsExactly(String.valueOf(rows.size() - 1));
        clock.advance(Duration.ofSeconds(1));
        migrated.audit().appendAll(rows);
        String columns = "agent, run_id, decision, host, port, reason, count";
        List<String> backfilled =
            older.queryValues(
                "SELECT "
                    + columns
                    + " FROM audit_egress WHERE audit_id <= "
                    + rows.size()
                    + " ORDER BY audit_id");
        List<String> appended =
            older.queryValues(
                "SELECT "
                    + columns
                    + " FROM audit_egress WHERE audit_id > "
                    + rows.size()
                    + " ORDER BY audit_id");
        assertThat(backfilled).isEqualTo(appended).isNotEmpty();
        VerifyResult result = migrated.audit().verify();
        assertThat(result.ok()).as(result.problems().toString()).isTrue();
      }
    }
  }

  /** Appends rows by hand, as a store of schema version 3 did, chained from the genesis hash. */
  private static void insertChained(Connection connection, List<AuditEvent> rows) throws Exception {
    String previous = AuditHash.GENESIS;
    long id = 0;
    for (AuditEvent event : rows) {
      id++;
      long time = START.toEpochMilli() + id;
      String data = CanonicalJson.write(event.data());
      String hash =
          AuditHash.of(
              id, time, event.type(), event.actor(), event.agent(), event.runId(), data, previous);
      try (PreparedStatement insert =
          connection.prepareStatement(
              "INSERT INTO audit_log (id, time_ms, type, actor, agent, run_id, data, prev_hash, hash)"
                  + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")) {
        insert.setLong(1, id);
        insert.setLong(2, time);
        insert.setString(3, event.type());
        insert.setString(4, event.actor());
        insert.setString(5, event.agent());
        insert.setString(6, event.runId());
        insert.setString(7, data);
        insert.setString(8, previous);
        insert.setString(9, hash);
        insert.executeUpdate();
      }
      previous = hash;
    }
    try (PreparedStatement head =
        connection.prepareStatement(
            "UPDATE audit_head SET last_id = ?, last_hash = ? WHERE id = 1")) {
      head.setLong(1, id);
      head.setString(2, previous);
      head.executeUpdate();
    }
  }
}
