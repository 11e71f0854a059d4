package dev.agentsandbox.runs.json;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.UncheckedIOException;

/**
 * The admin API's JSON settings, strict parsing and exact numbers: the server reads every request
 * body with them, and the command line reads a governed document back with them before it computes
 * what a change loosens, so both see the same values.
 */
public final class Json {
  private Json() {}

  /**
   * A mapper that refuses duplicate fields (a document must mean one thing) and trailing content,
   * and keeps decimals exact so limits compare as written.
   */
  public static ObjectMapper mapper() {
    return JsonMapper.builder()
        .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
        .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
        .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
        .disable(JsonParser.Feature.ALLOW_COMMENTS)
        .build();
  }

  /** The node as plain Java values (maps, lists, strings, numbers, booleans, null). */
  public static Object plain(ObjectMapper mapper, JsonNode node) {
    return mapper.convertValue(node, Object.class);
  }

  /** Plain Java values as a node. */
  public static JsonNode tree(ObjectMapper mapper, Object plain) {
    return mapper.valueToTree(plain);
  }

  public static byte[] bytes(ObjectMapper mapper, Object value) {
    try {
      return mapper.writeValueAsBytes(value);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }
}
