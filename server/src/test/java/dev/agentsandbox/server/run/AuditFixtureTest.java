package dev.agentsandbox.server.run;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.runs.OperatorEgress;
import dev.agentsandbox.runs.RunSettings;
import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.server.RunWiring;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.store.VerifyResult;
import dev.agentsandbox.testing.api.ApiClient;
import java.io.IOException;
import java.io.InputStream;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A store written by the code before the typed vocabulary (main at 1e0b859, fixture {@code
 * audit-fixture-1e0b859}, see its README) still verifies, exports byte for byte as it did, and
 * answers every run's timeline and run view as that code answered them; every exchange is checked
 * against openapi.json. Nothing here writes to the store but the reader's token.
 */
class AuditFixtureTest {
  private static final String FIXTURE = "audit-fixture-1e0b859/";
  private static final String BASE = "/api/admin/platform/agent-sandbox";
  private static final ObjectMapper JSON =
      new ObjectMapper().enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS);
  private Store store;
  private AgentSandboxServer server;
  private ApiClient api;
  private String reader;

  @BeforeEach
  void open(@TempDir Path dir) throws IOException {
    Path db = dir.resolve("audit.db");
    try (InputStream in = resource("audit.db")) {
      Files.copy(in, db, StandardCopyOption.REPLACE_EXISTING);
    }
    store = Store.open("jdbc:sqlite:" + db);
    reader =
        store
            .tokens()
            .create("fixture-reader", Set.of(Scopes.READ, Scopes.AUDIT_READ), null)
            .secret();
    server =
        AgentSandboxServer.start(
            new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
            store,
            new RunWiring(
                List.of(),
                OperatorEgress.NONE,
                RunSettings.defaults("fixture-cp"),
                // No reaper pass: it would revoke the run token the old recovery left valid (a
                // fix, tested in RunRevocationTest) and so add a row to the old chain.
                pass -> () -> {}));
    api = new ApiClient(server.baseUrl());
  }

  @AfterEach
  void close() {
    server.close();
    store.close();
  }

  static Stream<String> runs() throws IOException {
    return names().keySet().stream();
  }

  private static Map<String, String> names() throws IOException {
    try (InputStream in = resource("runs.json")) {
      return JSON.readValue(in, new com.fasterxml.jackson.core.type.TypeReference<>() {});
    }
  }

  @Test
  void theOldChainVerifiesAndExportsAsItDid() throws Exception {
    VerifyResult verified = store.audit().verify();
    assertThat(verified.ok()).as(verified.problems().toString()).isTrue();
    JsonNode before = tree("audit-verify.json");
    assertThat(verified.rowsChecked()).isEqualTo(before.path("rows_checked").asLong());
    assertThat(store.audit().head().toString()).isEqualTo(before.path("head").asText());

    StringWriter export = new StringWriter();
    store.audit().export(AuditQuery.all(Integer.MAX_VALUE), export);
    assertThat(export.toString()).isEqualTo(text("audit-export.jsonl"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("runs")
  void everyTimelineReadsAsTheOldCodeAnsweredIt(String name) throws Exception {
    String runId = names().get(name);
    JsonNode now = get(BASE + "/runs/" + runId + "/timeline");
    JsonNode before = sessionsAdded(tree("timeline-" + name + ".json"));

    // The first timeline of this server's life walks the whole chain, as every one did before.
    assertThat(now.path("chain").path("rows_checked").asLong())
        .isEqualTo(store.audit().head().id());
    assertThat(now.path("chain").has("walked_from_id")).isFalse();
    assertThat(canonical(now)).isEqualTo(canonical(before));

    JsonNode again = get(BASE + "/runs/" + runId + "/timeline");
    assertThat(again.path("chain").path("verified").asBoolean()).isTrue();
    assertThat(again.path("chain").path("rows_checked").asLong())
        .as("the second walks from the row the first verified: only this run's rows are re-read")
        .isLessThan(store.audit().head().id());
    assertThat(canonical(withoutWalk(again))).isEqualTo(canonical(before));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("runs")
  void everyStoredRunReadsAsTheOldCodeAnsweredIt(String name) throws Exception {
    JsonNode now = get(BASE + "/runs/" + names().get(name));
    ObjectNode before = sessionsAdded(tree("run-" + name + ".json"));
    // The old answer copied the store's labels into each listed decision, which the OpenAPI
    // document's EgressDecision never allowed; the vocabulary lists the decision alone.
    before.path("egress").forEach(decision -> ((ObjectNode) decision).remove("labels"));
    assertThat(canonical(now)).isEqualTo(canonical(before));
  }

  private JsonNode get(String path) {
    ApiClient.Answer answer = api.get(path, reader);
    assertThat(answer.status()).as(answer.body()).isEqualTo(200);
    return answer.json();
  }

  /**
   * The old answer with the one field sessions added to every run and timeline (docs/api.md,
   * "Sessions"): {@code kind}, which for a store written before sessions is {@code run}. Nothing
   * else may differ.
   */
  private static ObjectNode sessionsAdded(JsonNode old) {
    ObjectNode copy = old.deepCopy();
    assertThat(copy.has("kind")).as("an answer from before sessions has no kind").isFalse();
    copy.put("kind", "run");
    return copy;
  }

  private static JsonNode withoutWalk(JsonNode timeline) {
    ObjectNode copy = timeline.deepCopy();
    ObjectNode chain = (ObjectNode) copy.path("chain");
    chain.remove("walked_from_id");
    return copy;
  }

  /**
   * The document with keys sorted at every depth and the chain's work left out (how many rows a
   * check read depends on what was checked before): the same text is the same answer.
   */
  private static String canonical(JsonNode doc) throws IOException {
    ObjectNode copy = doc.deepCopy();
    if (copy.path("chain") instanceof ObjectNode chain) {
      chain.remove("rows_checked");
    }
    Object plain = JSON.treeToValue(copy, Object.class);
    return JSON.writerWithDefaultPrettyPrinter().writeValueAsString(plain);
  }

  private static JsonNode tree(String name) throws IOException {
    try (InputStream in = resource(name)) {
      return JSON.readTree(in);
    }
  }

  private static String text(String name) throws IOException {
    try (InputStream in = resource(name)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  private static InputStream resource(String name) {
    InputStream in = AuditFixtureTest.class.getResourceAsStream(FIXTURE + name);
    if (in == null) {
      throw new IllegalStateException("fixture resource missing: " + FIXTURE + name);
    }
    return in;
  }
}
