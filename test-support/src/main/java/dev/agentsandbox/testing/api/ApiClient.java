package dev.agentsandbox.testing.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/**
 * A real HTTP client against the server under test, checking each exchange against openapi.json.
 */
public final class ApiClient {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  /** Every exchange is checked against the OpenAPI document. */
  private final HttpClient http = ContractCheckedHttpClient.create();

  private final String baseUrl;

  public ApiClient(String baseUrl) {
    this.baseUrl = baseUrl;
  }

  /** One answer: status, headers and body. */
  public record Answer(int status, HttpResponse<String> raw) {
    public JsonNode json() {
      try {
        return MAPPER.readTree(raw.body());
      } catch (IOException e) {
        throw new AssertionError("not JSON: " + raw.body(), e);
      }
    }

    public String header(String name) {
      return raw.headers().firstValue(name).orElse(null);
    }

    public String body() {
      return raw.body();
    }
  }

  public Answer get(String path, String token) {
    return send(builder(path, token).GET());
  }

  public Answer put(String path, String token, String json, String... headers) {
    HttpRequest.Builder builder =
        builder(path, token)
            .header("Content-Type", "application/json")
            .PUT(HttpRequest.BodyPublishers.ofString(json));
    for (int i = 0; i < headers.length; i += 2) {
      builder.header(headers[i], headers[i + 1]);
    }
    return send(builder);
  }

  public Answer send(HttpRequest.Builder builder) {
    try {
      HttpResponse<String> response =
          http.send(builder.build(), HttpResponse.BodyHandlers.ofString());
      return new Answer(response.statusCode(), response);
    } catch (IOException e) {
      throw new AssertionError("request failed: " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }

  public HttpRequest.Builder builder(String path, String token) {
    HttpRequest.Builder builder =
        HttpRequest.newBuilder(URI.create(baseUrl + path)).timeout(Duration.ofSeconds(30));
    if (token != null) {
      builder.header("Authorization", "Bearer " + token);
    }
    return builder;
  }
}
