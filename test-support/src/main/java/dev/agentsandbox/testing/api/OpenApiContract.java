package dev.agentsandbox.testing.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import com.networknt.schema.Error;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Checks one HTTP exchange with the API against the checked-in OpenAPI document, so that an
 * endpoint, status, content type, query parameter or body field the document does not describe
 * fails the test that exchanged it. Bodies are validated with a JSON Schema 2020-12 validator
 * (OpenAPI 3.1 schemas are JSON Schema); every object schema in the document forbids properties it
 * does not list. Requests are checked when the server accepted them (2xx): a test that sends a
 * wrong request on purpose is answered with a documented error, which is checked instead.
 * Thread-safe.
 */
public final class OpenApiContract {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final YAMLMapper YAML = new YAMLMapper();

  /** Where the server keeps the document it serves; test-support reads it from the classpath. */
  private static final String DOCUMENT_RESOURCE = "dev/agentsandbox/server/openapi.json";

  private static final OpenApiContract DOCUMENT = load();

  private final JsonNode document;
  private final JsonNode schemas;
  private final SchemaRegistry registry =
      SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12);
  private final Map<String, Schema> compiled = new ConcurrentHashMap<>();

  private OpenApiContract(JsonNode document) {
    this.document = document;
    this.schemas = document.at("/components/schemas");
  }

  /** The document the server serves. */
  public static OpenApiContract document() {
    return DOCUMENT;
  }

  /** The raw document (schema references point at {@code #/$defs/}). */
  public JsonNode tree() {
    return document;
  }

  private static OpenApiContract load() {
    try (InputStream in =
        OpenApiContract.class.getClassLoader().getResourceAsStream(DOCUMENT_RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException(
            DOCUMENT_RESOURCE + " is not on the test classpath (server's jar is)");
      }
      // OpenAPI keeps schemas under components; as one JSON Schema they are $defs.
      String text =
          new String(in.readAllBytes(), StandardCharsets.UTF_8)
              .replace("#/components/schemas/", "#/$defs/");
      return new OpenApiContract(JSON.readTree(text));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** One exchange as a test saw it; bodies are null when not sent or not read as text. */
  public record Exchange(
      String method,
      String rawPath,
      String rawQuery,
      String requestContentType,
      String requestBody,
      int status,
      String responseContentType,
      String responseBody) {}

  /**
   * Checks {@code exchange} against the document.
   *
   * @throws AssertionError naming what the document does not describe
   */
  public void check(Exchange exchange) {
    String where = exchange.method() + " " + exchange.rawPath() + " → " + exchange.status();
    String template = template(exchange.rawPath());
    if (template == null) {
      // The router's answer for any path no operation has.
      require(exchange.status() == 404, where, "the path is not in the document");
      validate(where, "Error", exchange.responseBody());
      return;
    }
    JsonNode operation = document.get("paths").get(template).get(lower(exchange.method()));
    if (operation == null) {
      require(exchange.status() == 405, where, "the document has no " + exchange.method());
      validate(where, "Error", exchange.responseBody());
      return;
    }
    JsonNode response = resolve(operation.at("/responses/" + exchange.status()));
    require(
        !response.isMissingNode(),
        where,
        "status " + exchange.status() + " is not documented for " + template);
    boolean accepted = exchange.status() / 100 == 2;
    if (accepted) {
      checkQuery(where, operation, template, exchange.rawQuery());
      checkRequestBody(where, operation, exchange);
    }
    if (exchange.responseContentType() == null) {
      require(
          exchange.responseBody() == null || exchange.responseBody().isEmpty(),
          where,
          "a body without a content type");
      return;
    }
    String media = media(exchange.responseContentType());
    JsonNode content = response.path("content").path(media);
    require(!content.isMissingNode(), where, "the content type " + media + " is not documented");
    if (exchange.responseBody() != null) {
      validateMedia(where + " (response)", media, content.path("schema"), exchange.responseBody());
    }
  }

  private void checkQuery(String where, JsonNode operation, String template, String rawQuery) {
    if (rawQuery == null || rawQuery.isEmpty()) {
      return;
    }
    List<String> documented = new ArrayList<>();
    for (JsonNode source : List.of(operation, document.get("paths").get(template))) {
      for (JsonNode parameter : source.path("parameters")) {
        if (parameter.path("in").asText().equals("query")) {
          documented.add(parameter.path("name").asText());
        }
      }
    }
    for (String pair : rawQuery.split("&")) {
      String name = pair.split("=", 2)[0];
      require(documented.contains(name), where, "the query parameter " + name + " is undocumented");
    }
  }

  private void checkRequestBody(String where, JsonNode operation, Exchange exchange) {
    if (exchange.requestBody() == null || exchange.requestBody().isEmpty()) {
      return;
    }
    JsonNode body = operation.path("requestBody");
    require(!body.isMissingNode(), where, "the operation documents no request body");
    // A body without a type is read as bytes (a session's file): the document names that type.
    String media =
        exchange.requestContentType() == null
            ? "application/octet-stream"
            : media(exchange.requestContentType());
    JsonNode content = body.path("content").path(media);
    require(
        !content.isMissingNode(), where, "the request content type " + media + " is undocumented");
    if (media.equals("application/octet-stream") || media.equals("application/x-tar")) {
      return; // bytes: the document says only that they are bytes
    }
    // JSON, also when labelled application/x-www-form-urlencoded (read as JSON by the server).
    validateMedia(
        where + " (request)", "application/json", content.path("schema"), exchange.requestBody());
  }

  private void validateMedia(String where, String media, JsonNode schema, String body) {
    switch (media) {
      case "application/json" -> validate(where, schema, parse(JSON, where, body));
      case "application/yaml" -> validate(where, schema, parse(YAML, where, body));
      case "application/x-ndjson" -> {
        for (String line : body.split("\n")) {
          if (!line.isBlank()) {
            validate(where, schema, parse(JSON, where, line));
          }
        }
      }
      default -> {
        // Text (metrics, a run's output): the document says only that it is text.
      }
    }
  }

  private void validate(String where, String schemaName, String body) {
    ObjectNode ref = JSON.createObjectNode().put("$ref", "#/$defs/" + schemaName);
    validate(where, ref, parse(JSON, where, body == null ? "" : body));
  }

  private void validate(String where, JsonNode schema, JsonNode instance) {
    Schema validator =
        compiled.computeIfAbsent(
            schema.toString(),
            key -> {
              ObjectNode root = JSON.createObjectNode();
              root.put("$schema", "https://json-schema.org/draft/2020-12/schema");
              root.set("$defs", schemas);
              root.set("allOf", JSON.createArrayNode().add(schema));
              return registry.getSchema(root);
            });
    List<Error> errors = validator.validate(instance);
    if (!errors.isEmpty()) {
      throw new AssertionError(
          where
              + ": the body does not match openapi.json: "
              + errors.stream().map(Error::toString).toList()
              + " in "
              + bounded(instance.toString()));
    }
  }

  private JsonNode resolve(JsonNode node) {
    JsonNode ref = node.path("$ref");
    if (ref.isTextual() && ref.asText().startsWith("#/")) {
      return document.at(ref.asText().substring(1));
    }
    return node;
  }

  /** The documented path template {@code rawPath} matches, or null. */
  public String template(String rawPath) {
    String[] have = rawPath.split("/", -1);
    for (Iterator<String> it = document.get("paths").fieldNames(); it.hasNext(); ) {
      String template = it.next();
      String[] want = template.split("/", -1);
      if (want.length != have.length) {
        continue;
      }
      boolean matches = true;
      for (int i = 0; i < want.length && matches; i++) {
        boolean capture = want[i].startsWith("{") && want[i].endsWith("}") && !have[i].isEmpty();
        matches = capture || want[i].equals(have[i]);
      }
      if (matches) {
        return template;
      }
    }
    return null;
  }

  private static JsonNode parse(ObjectMapper mapper, String where, String body) {
    try {
      return mapper.readTree(body);
    } catch (IOException e) {
      throw new AssertionError(where + ": the body does not parse: " + bounded(body), e);
    }
  }

  private static String media(String contentType) {
    return lower(contentType.split(";", 2)[0].trim());
  }

  private static String lower(String text) {
    return text.toLowerCase(Locale.ROOT);
  }

  private static String bounded(String text) {
    return text.length() <= 2000 ? text : text.substring(0, 2000) + "…";
  }

  private static void require(boolean condition, String where, String what) {
    if (!condition) {
      throw new AssertionError(where + ": " + what + " (describe it in openapi.json)");
    }
  }
}
