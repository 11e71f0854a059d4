package dev.agentsandbox.store.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.store.StoreException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The one JSON text form the store writes: object keys sorted by code point at every depth, no
 * insignificant whitespace. Audit hashes are computed over exactly this text, so an external
 * verifier can reproduce them with any JSON library that sorts keys.
 */
public final class CanonicalJson {

  private static final ObjectMapper MAPPER = JsonMapper.builder().build();

  private CanonicalJson() {}

  /** The canonical text of {@code node}; {@code null} becomes the JSON literal {@code null}. */
  public static String write(JsonNode node) {
    try {
      return MAPPER.writeValueAsString(
          sorted(node == null ? JsonNodeFactory.instance.nullNode() : node));
    } catch (JsonProcessingException e) {
      throw new StoreException("write JSON for the store: " + e.getOriginalMessage(), e);
    }
  }

  /** Parses text the store wrote earlier. */
  public static JsonNode read(String text) {
    try {
      return MAPPER.readTree(text);
    } catch (JsonProcessingException e) {
      throw new StoreException(
          "read JSON from the store: " + e.getOriginalMessage() + " (was the row edited by hand?)",
          e);
    }
  }

  /** The shared mapper (thread-safe once configured). */
  public static ObjectMapper mapper() {
    return MAPPER;
  }

  private static JsonNode sorted(JsonNode node) {
    if (node.isObject()) {
      List<Map.Entry<String, JsonNode>> fields = new ArrayList<>(node.properties());
      fields.sort(Map.Entry.comparingByKey());
      ObjectNode copy = JsonNodeFactory.instance.objectNode();
      for (Map.Entry<String, JsonNode> field : fields) {
        copy.set(field.getKey(), sorted(field.getValue()));
      }
      return copy;
    }
    if (node.isArray()) {
      ArrayNode copy = JsonNodeFactory.instance.arrayNode(node.size());
      for (JsonNode element : node) {
        copy.add(sorted(element));
      }
      return copy;
    }
    return node;
  }
}
