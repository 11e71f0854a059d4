package dev.agentsandbox.server;

import dev.agentsandbox.server.http.Request;
import dev.agentsandbox.server.http.Response;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;

/**
 * Serves the API's OpenAPI 3.1 description, {@code openapi.json} beside this class: checked in,
 * read once, and kept true by the tests (every exchange of the API's tests is checked against it).
 */
final class OpenApiDocument {
  /** Where the document is served, without a token: it describes the API, it holds no data. */
  static final String PATH = "/api/openapi.json";

  private final byte[] document;

  private OpenApiDocument(byte[] document) {
    this.document = document;
  }

  /** Reads the document from the classpath. */
  static OpenApiDocument load() {
    try (InputStream in = OpenApiDocument.class.getResourceAsStream("openapi.json")) {
      if (in == null) {
        throw new IllegalStateException(
            "read openapi.json: not on the classpath (the server jar is incomplete; rebuild it)");
      }
      return new OpenApiDocument(in.readAllBytes());
    } catch (IOException e) {
      throw new UncheckedIOException("read openapi.json: " + e.getMessage(), e);
    }
  }

  Response serve(Request request) {
    request.onlyQueryParams(java.util.Set.of());
    return Response.json(200, document.clone());
  }
}
