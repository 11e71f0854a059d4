package dev.agentsandbox.runs.audit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.List;
import java.util.Map;

/**
 * The vocabulary's plain trees as Jackson nodes and back, value for value: a {@code double} stays a
 * double ({@code 1.0}, as the rows have always held it), whatever a mapper's number settings would
 * make of it on a round trip through text.
 */
public final class PlainJson {
  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

  private PlainJson() {}

  /** The node of a plain tree (maps, lists, strings, numbers, booleans, null). */
  public static JsonNode node(Object plain) {
    return switch (plain) {
      case null -> NODES.nullNode();
      case Map<?, ?> map -> {
        ObjectNode object = NODES.objectNode();
        map.forEach((key, value) -> object.set(String.valueOf(key), node(value)));
        yield object;
      }
      case List<?> list -> {
        ArrayNode array = NODES.arrayNode(list.size());
        list.forEach(value -> array.add(node(value)));
        yield array;
      }
      case String text -> NODES.textNode(text);
      case Boolean flag -> NODES.booleanNode(flag);
      // As a parser reads them: an int where the value fits, so trees compare equal either way.
      case Integer n -> NODES.numberNode(n.intValue());
      case Short n -> NODES.numberNode(n.intValue());
      case Long n -> n == n.intValue() ? NODES.numberNode(n.intValue()) : NODES.numberNode(n);
      case Double n -> NODES.numberNode(n);
      case Float n -> NODES.numberNode(n);
      case BigInteger n -> NODES.numberNode(n);
      case BigDecimal n -> NODES.numberNode(n);
      default ->
          throw new IllegalArgumentException(
              "not a plain value: " + plain.getClass().getName() + " (the vocabulary writes none)");
    };
  }

  /** The plain tree of a node, as the vocabulary reads it. */
  public static Object plain(JsonNode node) {
    if (node == null || node.isNull() || node.isMissingNode()) {
      return null;
    }
    if (node.isObject()) {
      Map<String, Object> map = new java.util.LinkedHashMap<>();
      node.properties().forEach(e -> map.put(e.getKey(), plain(e.getValue())));
      return map;
    }
    if (node.isArray()) {
      List<Object> list = new java.util.ArrayList<>(node.size());
      node.forEach(element -> list.add(plain(element)));
      return list;
    }
    if (node.isTextual()) {
      return node.asText();
    }
    if (node.isBoolean()) {
      return node.booleanValue();
    }
    if (node.isIntegralNumber()) {
      return node.canConvertToLong() ? (Object) node.longValue() : node.bigIntegerValue();
    }
    if (node.isBigDecimal()) {
      return node.decimalValue();
    }
    if (node.isNumber()) {
      return node.doubleValue();
    }
    return node.asText();
  }
}
