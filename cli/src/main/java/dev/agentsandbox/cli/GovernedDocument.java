package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.policy.config.EgressPolicy;
import dev.agentsandbox.policy.config.Loosening;
import dev.agentsandbox.policy.config.Loosenings;
import dev.agentsandbox.policy.config.SandboxConfig;
import dev.agentsandbox.server.http.Json;
import java.io.IOException;
import java.util.List;

/**
 * One of the two governed documents as the command line handles it: its path, the fields the server
 * computes (stripped before a document goes back), and the loosenings of a change, computed with
 * the same {@code policy} code the server enforces so they can be shown before saving.
 */
enum GovernedDocument {
  SANDBOX_CONFIG("agent-sandbox", AdminApi.BASE),
  EGRESS_POLICY("egress-policy", AdminApi.EGRESS_POLICY);

  private static final ObjectMapper EXACT = Json.mapper();
  private static final ObjectMapper PLAIN = new ObjectMapper();

  private final String key;
  private final String path;

  GovernedDocument(String key, String path) {
    this.key = key;
    this.path = path;
  }

  static GovernedDocument of(boolean egressPolicy) {
    return egressPolicy ? EGRESS_POLICY : SANDBOX_CONFIG;
  }

  String key() {
    return key;
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
    Object old = plain(before);
    Object now = plain(after);
    return switch (this) {
      case SANDBOX_CONFIG -> Loosenings.between(SandboxConfig.read(old), SandboxConfig.read(now));
      case EGRESS_POLICY -> Loosenings.between(EgressPolicy.read(old), EgressPolicy.read(now));
    };
  }

  /** Plain values with exact decimals, without version and reason, as the server reads them. */
  private static Object plain(JsonNode document) throws IOException {
    ObjectNode body = editable(document);
    body.remove(List.of("version", "reason"));
    JsonNode exact = EXACT.readTree(PLAIN.writeValueAsBytes(body));
    return Json.plain(EXACT, exact);
  }
}
