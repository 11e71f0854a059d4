package dev.agentsandbox.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.store.internal.AuditHash;
import java.io.StringWriter;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The audit log's behaviour, shared by the SQLite test and the PostgreSQL IT. */
abstract class AuditLogContract extends StoreTestBase {

  AuditRow append(int n) {
    clock.advance(Duration.ofMillis(7));
    return store
        .audit()
        .append(
            new AuditEvent(
                n % 2 == 0 ? "agent_sandbox.launch" : "agent_sandbox.egress.deny",
                "admin",
                n % 3 == 0 ? null : "helper",
                "run-" + (n % 4),
                json("{\"n\": " + n + ", \"b\": [3, {\"z\": 1, \"a\": 2}], \"a\": \"x\"}")));
  }

  void appendRows(int count) {
    for (int n = 1; n <= count; n++) {
      append(n);
    }
  }

  @Test
  void appendChainsRowsFromTheGenesisHash() {
    AuditRow first = append(1);
    AuditRow second = append(2);

    assertThat(first.id()).isEqualTo(1);
    assertThat(first.prevHash()).isEqualTo(AuditHash.GENESIS);
    assertThat(second.id()).isEqualTo(2);
    assertThat(second.prevHash()).isEqualTo(first.hash());
    assertThat(first.hash()).matches("[0-9a-f]{64}").isNotEqualTo(second.hash());
    assertThat(first.time()).isEqualTo(START.plusMillis(7));
    assertThat(store.audit().head()).isEqualTo(new AuditHead(2, second.hash()));
  }

  @Test
  void appendAllChainsConsecutiveRowsInOneCommit() {
    AuditRow before = append(1);

    List<AuditRow> batch =
        store
            .audit()
            .appendAll(
                List.of(
                    new AuditEvent("agent_sandbox.egress.allow", "proxy", "helper", "r", null),
                    new AuditEvent("agent_sandbox.egress.deny", "proxy", "helper", "r", null)));

    assertThat(batch).extracting(AuditRow::id).containsExactly(2L, 3L);
    assertThat(batch.get(0).prevHash()).isEqualTo(before.hash());
    assertThat(batch.get(1).prevHash()).isEqualTo(batch.get(0).hash());
    assertThat(store.audit().query(AuditQuery.all(10))).hasSize(3);
    assertThat(store.audit().verify().ok()).isTrue();
    assertThat(store.audit().appendAll(List.of())).isEmpty();
  }

  @Test
  void appendAllIsAllOrNothing() throws Exception {
    AuditRow before = append(1);
    fixture.refuseAuditInsertsBy("refused");
    AuditEvent good = new AuditEvent("agent_sandbox.launch", "admin", null, null, null);
    AuditEvent refused = new AuditEvent("agent_sandbox.launch", "refused", null, null, null);

    assertThatThrownBy(() -> store.audit().appendAll(List.of(good, refused, good)))
        .isInstanceOf(UnableToAccessStoreException.class)
        .hasMessageContaining("append 3 audit rows");

    assertThat(store.audit().query(AuditQuery.all(10))).containsExactly(before);
    assertThat(store.audit().head()).isEqualTo(new AuditHead(1, before.hash()));
    assertThat(
            store
                .audit()
                .append(new AuditEvent("agent_sandbox.launch", "admin", null, null, null))
                .id())
        .isEqualTo(2);
  }

  @Test
  void queryReturnsWhatAppendReturned() {
    AuditRow appended = append(1);

    List<AuditRow> rows = store.audit().query(AuditQuery.all(10));

    assertThat(rows).containsExactly(appended);
    assertThat(rows.get(0).data().get("b").get(1).fieldNames())
        .toIterable()
        .containsExactly("a", "z");
  }

  @Test
  void hashIsReproducibleFromTheDocumentedEncoding() {
    AuditRow row = append(1);

    String expected =
        AuditHash.sha256Hex(
            "[1,"
                + row.time().toEpochMilli()
                + ",\"agent_sandbox.egress.deny\",\"admin\",\"helper\",\"run-1\","
                + "\"{\\\"a\\\":\\\"x\\\",\\\"b\\\":[3,{\\\"a\\\":2,\\\"z\\\":1}],\\\"n\\\":1}\","
                + "\""
                + AuditHash.GENESIS
                + "\"]");
    assertThat(row.hash()).isEqualTo(expected);
  }

  @Test
  void queryFiltersByTypePrefixAgentRunAndTime() {
    appendRows(12);

    assertThat(
            store
                .audit()
                .query(new AuditQuery("agent_sandbox.egress.", null, null, null, null, 100)))
        .extracting(AuditRow::id)
        .containsExactly(1L, 3L, 5L, 7L, 9L, 11L);
    assertThat(store.audit().query(new AuditQuery(null, "helper", "run-2", null, null, 100)))
        .extracting(AuditRow::id)
        .containsExactly(2L, 10L);
    assertThat(
            store
                .audit()
                .query(new AuditQuery(null, null, null, START.plusMillis(7 * 10), null, 100)))
        .extracting(AuditRow::id)
        .containsExactly(10L, 11L, 12L);
  }

  @Test
  void typePrefixIsLiteralNotAPattern() {
    appendRows(4);

    assertThat(store.audit().query(new AuditQuery("agent_sandbox.%", null, null, null, null, 100)))
        .isEmpty();
    assertThat(store.audit().query(new AuditQuery("AGENT_SANDBOX.", null, null, null, null, 100)))
        .isEmpty();
  }

  @Test
  void queryWithoutCursorReturnsTheNewestRowsOldestFirst() {
    appendRows(5);

    assertThat(store.audit().query(AuditQuery.all(2)))
        .extracting(AuditRow::id)
        .containsExactly(4L, 5L);
  }

  @Test
  void queryAfterIdPagesForward() {
    appendRows(5);

    assertThat(store.audit().query(new AuditQuery(null, null, null, null, 2L, 2)))
        .extracting(AuditRow::id)
        .containsExactly(3L, 4L);
  }

  @Test
  void queryCapsTheLimitAtOneThousand() {
    AuditEvent event = new AuditEvent("agent_sandbox.launch", "admin", null, null, null);
    // One transaction: 1001 separate appends would each wait for an fsync.
    store.audit().appendAll(Collections.nCopies(1001, event));

    assertThat(store.audit().query(AuditQuery.all(5000))).hasSize(1000);
    assertThat(store.audit().verify()).isEqualTo(new VerifyResult(true, 1001, List.of()));
  }

  @Test
  void exportWritesOneJsonObjectPerLine() throws Exception {
    appendRows(3);
    StringWriter out = new StringWriter();

    store.audit().export(new AuditQuery(null, null, null, null, null, Integer.MAX_VALUE), out);

    String[] lines = out.toString().split("\n");
    assertThat(lines).hasSize(3);
    JsonNode first = JSON.readTree(lines[0]);
    assertThat(first.get("id").asLong()).isEqualTo(1);
    assertThat(first.get("type").asText()).isEqualTo("agent_sandbox.egress.deny");
    assertThat(first.get("time").asText()).isEqualTo(START.plusMillis(7).toString());
    assertThat(first.get("run_id").asText()).isEqualTo("run-1");
    assertThat(first.get("data").get("n").asInt()).isEqualTo(1);
    assertThat(JSON.readTree(lines[2]).get("prev_hash").asText())
        .isEqualTo(JSON.readTree(lines[1]).get("hash").asText());
  }

  @Test
  void exportHonoursCursorAndLimit() {
    appendRows(6);
    StringWriter out = new StringWriter();

    store.audit().export(new AuditQuery(null, null, null, null, 2L, 3), out);

    assertThat(out.toString().lines().map(line -> json(line).get("id").asLong()))
        .containsExactly(3L, 4L, 5L);
  }

  @Test
  void eventOutsideTheNamespaceIsRefused() {
    assertThatThrownBy(() -> new AuditEvent("config.update", "admin", null, null, null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("agent_sandbox.*");
  }

  @Test
  void verifyPassesOnAnUntouchedChain() {
    assertThat(store.audit().verify()).isEqualTo(new VerifyResult(true, 0, List.of()));
    appendRows(5);

    assertThat(store.audit().verify()).isEqualTo(new VerifyResult(true, 5, List.of()));
    assertThat(store.audit().verify(store.audit().head()).ok()).isTrue();
  }

  @Test
  void storeSurvivesReopeningWithTheChainIntact() {
    appendRows(3);
    store.close();
    store = Store.open(fixture.url(), clock);

    AuditRow fourth = append(4);

    assertThat(fourth.id()).isEqualTo(4);
    assertThat(store.audit().verify().ok()).isTrue();
  }
}
