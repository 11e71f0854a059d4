package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.policy.config.Loosening;
import dev.agentsandbox.runs.json.Json;
import java.io.IOException;
import java.util.List;

/**
 * One of the two governed documents as the command line handles it: its path, the fields the server
 * computes (stripped before a document goes back), and the loosenings of a change, computed with
 * the same {@code policy} code the server enforces so they can be shown before saving.
 */
enum GovernedDocument {
  SANDBOX_CONFIG(dev.agentsandbox.policy.governance.GovernedDocument.SANDBOX, AdminApi.BASE),
  EGRESS_POLICY(
      dev.agentsandbox.policy.governance.GovernedDocument.EGRESS_POLICY, AdminApi.EGRESS_POLICY);

  private static final ObjectMapper EXACT = Json.mapper();
  private static final ObjectMapper PLAIN = new ObjectMapper();

  /** The server's description of the document: its key, reader and loosening rules. */
  private final dev.agentsandbox.policy.governance.GovernedDocument<?> governed;

  private final String path;

  GovernedDocument(dev.agentsandbox.policy.governance.GovernedDocument<?> governed, String path) {
    this.governed = governed;
    this.path = path;
  }

  static GovernedDocument of(boolean egressPolicy) {
    return egressPolicy ? EGRESS_POLICY : SANDBOX_CONFIG;
  }

  String key() {
    return governed.key();
  }

  String path() {
    return path;
  }

  String title() {
    return this == SANDBOX_CONFIG ? "the sandbox configuration" : "the egress policy";
  }

  /** The document without what the server computes (and refuses on PUT). */
  static ObjectNode editable(JsonNode document) {
    ObjectNode copy = document.deepCopy();
    copy.remove(List.of("updated_at", "updated_by", "change"));
    for (JsonNode agent : copy.path("agents")) {
      if (agent instanceof ObjectNode object) {
        object.remove("effective_allow");
      }
    }
    return copy;
  }

  /**
   * What the change from {@code before} to {@code after} loosens, by the rules the server applies.
   *
   * @throws dev.agentsandbox.policy.config.InvalidConfigException listing every problem of {@code
   *     after}
   */
  List<Loosening> loosenings(JsonNode before, JsonNode after) throws IOException {
    return between(governed, plain(before), plain(after));
  }

  private static <T> List<Loosening> between(
      dev.agentsandbox.policy.governance.GovernedDocument<T> governed,
      Object before,
      Object after) {
    return governed
        .loosenings()
        .apply(governed.reader().apply(before), governed.reader().apply(after));
  }

  /** Plain values with exact decimals, without version and reason, as the server reads them. */
  private static Object plain(JsonNode document) throws IOException {
    ObjectNode body = editable(document);
    body.remove(List.of("version", "reason"));
    JsonNode exact = EXACT.readTree(PLAIN.writeValueAsBytes(body));
    return Json.plain(EXACT, exact);
  }
}
