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
  private final Duration requestTimeout;

  public ApiClient(String baseUrl) {
    this(baseUrl, Duration.ofSeconds(30));
  }

  /** A client whose requests each give up after {@code requestTimeout}. */
  public ApiClient(String baseUrl, Duration requestTimeout) {
    this.baseUrl = baseUrl;
    this.requestTimeout = requestTimeout;
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

    /** The body as JSON, after asserting the status was 2xx (the message shows the body if not). */
    public JsonNode successJson() {
      if (status / 100 != 2) {
        throw new AssertionError(
            raw.request().method()
                + " "
                + raw.uri().getRawPath()
                + " answered "
                + status
                + ": "
                + raw.body());
      }
      return json();
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

  public Answer post(String path, String token, String json) {
    return send("POST", path, token, json);
  }

  public Answer delete(String path, String token) {
    return send(builder(path, token).DELETE());
  }

  /** Any method; {@code json} null sends no body. */
  public Answer send(String method, String path, String token, String json) {
    HttpRequest.Builder builder = builder(path, token);
    if (json == null) {
      builder.method(method, HttpRequest.BodyPublishers.noBody());
    } else {
      builder
          .header("Content-Type", "application/json")
          .method(method, HttpRequest.BodyPublishers.ofString(json));
    }
    return send(builder);
  }

  /**
   * One checked exchange that lets a transport failure through, for tests where the server going
   * away mid-request is the point (a fault test, a kill).
   */
  public Answer exchange(HttpRequest.Builder builder) throws IOException, InterruptedException {
    HttpResponse<String> response =
        http.send(builder.build(), HttpResponse.BodyHandlers.ofString());
    return new Answer(response.statusCode(), response);
  }

  public Answer send(HttpRequest.Builder builder) {
    try {
      return exchange(builder);
    } catch (IOException e) {
      throw new AssertionError("request failed: " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }

  public HttpRequest.Builder builder(String path, String token) {
    HttpRequest.Builder builder =
        HttpRequest.newBuilder(URI.create(baseUrl + path)).timeout(requestTimeout);
    if (token != null) {
      builder.header("Authorization", "Bearer " + token);
    }
    return builder;
  }
}
