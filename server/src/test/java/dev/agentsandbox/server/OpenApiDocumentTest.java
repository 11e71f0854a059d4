package dev.agentsandbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.server.http.Route;
import dev.agentsandbox.testing.api.ApiClient.Answer;
import dev.agentsandbox.testing.api.OpenApiContract;
import dev.agentsandbox.testing.api.OpenApiContract.Exchange;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The OpenAPI document: served without a token, the same as the checked-in file, one operation per
 * route with the route's scope, and a contract check that refuses what the document does not say.
 */
class OpenApiDocumentTest {
  private static final String CONFIG = "/api/admin/platform/agent-sandbox";
  private static final String CONFIG_BODY =
      "{\"version\":0,\"updated_at\":null,\"updated_by\":null,\"enabled\":false,"
          + "\"backend\":\"auto\",\"require_runtime_class\":false,\"agents\":{}}";

  @TempDir Path dir;
  ApiFixture api;

  @BeforeEach
  void start() throws Exception {
    api = new ApiFixture("jdbc:sqlite:" + dir.resolve("store.db"));
  }

  @AfterEach
  void stop() {
    api.close();
  }

  @Test
  void isServedWithoutATokenExactlyAsCheckedIn() throws Exception {
    Answer answer = api.client.get("/api/openapi.json", null);
    assertThat(answer.status()).isEqualTo(200);
    assertThat(answer.header("Content-Type")).startsWith("application/json");
    try (InputStream in = OpenApiDocument.class.getResourceAsStream("openapi.json")) {
      assertThat(answer.body()).isEqualTo(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    }
    assertThat(answer.json().get("openapi").asText()).isEqualTo("3.1.0");
  }

  @Test
  void everyRouteIsAnOperationWithItsScopeAndEveryOperationARoute() {
    TreeSet<String> routes = new TreeSet<>();
    for (Route route : api.server.routes()) {
      routes.add(route.method() + " " + route.path() + " " + route.scope());
    }
    TreeSet<String> operations = new TreeSet<>();
    JsonNode paths = OpenApiContract.document().tree().get("paths");
    for (Iterator<Map.Entry<String, JsonNode>> it = paths.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> path = it.next();
      for (String method : new String[] {"get", "put", "post", "delete", "patch", "head"}) {
        JsonNode operation = path.getValue().get(method);
        if (operation == null) {
          continue;
        }
        JsonNode security = operation.get("security");
        assertThat(security).as("%s %s declares its security", method, path.getKey()).isNotNull();
        // No security: a public route; a bearer token with no scope listed: any valid token.
        String scope =
            security.isEmpty()
                ? "null"
                : security.get(0).get("bearerAuth").isEmpty()
                    ? Scopes.ANY_TOKEN
                    : security.get(0).get("bearerAuth").get(0).asText();
        assertThat(security.size()).isLessThanOrEqualTo(1);
        operations.add(
            method.toUpperCase(java.util.Locale.ROOT) + " " + path.getKey() + " " + scope);
      }
    }
    assertThat(operations).isEqualTo(routes);
  }

  @Test
  void contentTypesCarryNoParameters() {
    // A parameter (charset=...) in a media type key would never match what clients look up.
    java.util.List<String> withParameters = new java.util.ArrayList<>();
    OpenApiContract.document()
        .tree()
        .findParents("content")
        .forEach(
            parent ->
                parent
                    .get("content")
                    .fieldNames()
                    .forEachRemaining(
                        media -> {
                          if (media.contains(";")) {
                            withParameters.add(media);
                          }
                        }));
    assertThat(withParameters).isEmpty();
  }

  @Test
  void closedSetsAreTheCodesOwn() {
    JsonNode schemas = OpenApiContract.document().tree().get("components").get("schemas");
    TreeSet<String> ends = new TreeSet<>();
    for (dev.agentsandbox.backend.Completion.End end :
        dev.agentsandbox.backend.Completion.End.values()) {
      ends.add(end.name().toLowerCase(java.util.Locale.ROOT));
    }
    for (dev.agentsandbox.runs.session.SessionEnding ending :
        dev.agentsandbox.runs.session.SessionEnding.values()) {
      ends.add(ending.wireName());
    }
    ends.add("null");
    assertThat(enumOf(schemas.at("/Run/properties/end"))).isEqualTo(ends);
    TreeSet<String> stepEnds = new TreeSet<>();
    for (dev.agentsandbox.runs.session.StepEndReason end :
        dev.agentsandbox.runs.session.StepEndReason.values()) {
      stepEnds.add(end.wireName());
    }
    assertThat(enumOf(schemas.at("/TimelineStep/properties/end"))).isEqualTo(stepEnds);
    stepEnds.add("null");
    assertThat(enumOf(schemas.at("/Step/properties/end"))).isEqualTo(stepEnds);
    TreeSet<String> kinds0 = new TreeSet<>();
    for (dev.agentsandbox.store.RunKind kind : dev.agentsandbox.store.RunKind.values()) {
      kinds0.add(kind.wireName());
    }
    assertThat(enumOf(schemas.get("RunKind"))).isEqualTo(kinds0);
    assertThat(enumOf(schemas.at("/Timeline/properties/end/properties/end_reason")))
        .isEqualTo(ends);
    TreeSet<String> statuses = new TreeSet<>();
    for (dev.agentsandbox.store.RunStatus status : dev.agentsandbox.store.RunStatus.values()) {
      // A refused run is audited (agent_sandbox.refused) but never stored, so never shown.
      if (status != dev.agentsandbox.store.RunStatus.REFUSED) {
        statuses.add(status.wireName());
      }
    }
    assertThat(enumOf(schemas.get("RunStatus"))).isEqualTo(statuses);
    TreeSet<String> isolations = new TreeSet<>();
    for (dev.agentsandbox.backend.Isolation isolation :
        dev.agentsandbox.backend.Isolation.values()) {
      isolations.add(isolation.name().toLowerCase(java.util.Locale.ROOT));
    }
    assertThat(enumOf(schemas.get("Isolation"))).isEqualTo(isolations);
    TreeSet<String> backends = new TreeSet<>();
    for (dev.agentsandbox.policy.config.Backend backend :
        dev.agentsandbox.policy.config.Backend.values()) {
      backends.add(backend.wireName());
    }
    assertThat(enumOf(schemas.get("Backend"))).isEqualTo(backends);
    TreeSet<String> kinds = new TreeSet<>();
    for (dev.agentsandbox.policy.config.Loosening.Kind kind :
        dev.agentsandbox.policy.config.Loosening.Kind.values()) {
      kinds.add(kind.wireName());
    }
    assertThat(enumOf(schemas.at("/Loosening/properties/kind"))).isEqualTo(kinds);
    TreeSet<String> sources = new TreeSet<>();
    for (dev.agentsandbox.policy.config.CredentialSpec.Source source :
        dev.agentsandbox.policy.config.CredentialSpec.Source.values()) {
      sources.add(source.wireName());
    }
    assertThat(enumOf(schemas.at("/CredentialSpec/properties/source"))).isEqualTo(sources);
    assertThat(
            enumOf(
                schemas.at(
                    "/Timeline/properties/what_ran/properties/credentials/items/properties/source")))
        .isEqualTo(sources);
    TreeSet<String> whys = new TreeSet<>();
    for (dev.agentsandbox.policy.evidence.NotFixable.Why why :
        dev.agentsandbox.policy.evidence.NotFixable.Why.values()) {
      whys.add(why.wireName());
    }
    assertThat(enumOf(schemas.at("/NotFixableRefusals/properties/why"))).isEqualTo(whys);
  }

  private static TreeSet<String> enumOf(JsonNode schema) {
    TreeSet<String> values = new TreeSet<>();
    schema.get("enum").forEach(v -> values.add(v.isNull() ? "null" : v.asText()));
    return values;
  }

  static Stream<Arguments> undocumented() {
    return Stream.of(
        Arguments.of(
            "a response field the document does not list",
            new Exchange(
                "GET",
                CONFIG,
                null,
                null,
                null,
                200,
                "application/json",
                "{\"secret_field\":1," + CONFIG_BODY.substring(1))),
        Arguments.of(
            "a status the operation does not list",
            new Exchange(
                "GET",
                CONFIG,
                null,
                null,
                null,
                418,
                "application/json",
                "{\"error\":\"teapot\",\"message\":\"no\"}")),
        Arguments.of(
            "a path the document does not have, answered",
            new Exchange(
                "GET",
                "/api/admin/platform/secret",
                null,
                null,
                null,
                200,
                "application/json",
                "{}")),
        Arguments.of(
            "a method the path does not have, answered",
            new Exchange("PATCH", CONFIG, null, null, null, 200, "application/json", CONFIG_BODY)),
        Arguments.of(
            "a query parameter the operation does not list, accepted",
            new Exchange(
                "GET", CONFIG, "debug=1", null, null, 200, "application/json", CONFIG_BODY)),
        Arguments.of(
            "a request field the document does not list, accepted",
            new Exchange(
                "PUT",
                CONFIG,
                null,
                "application/json",
                "{\"enabled\":false,\"debug\":true}",
                200,
                "application/json",
                CONFIG_BODY)),
        Arguments.of(
            "a content type the response does not list",
            new Exchange("GET", CONFIG, null, null, null, 200, "text/html", "<p>")),
        Arguments.of(
            "an error body with an unknown field",
            new Exchange(
                "GET",
                CONFIG,
                null,
                null,
                null,
                401,
                "application/json",
                "{\"error\":\"missing_token\",\"message\":\"no\",\"token\":\"x\"}")));
  }

  @ParameterizedTest(name = "refuses {0}")
  @MethodSource("undocumented")
  void theContractCheckRefusesWhatTheDocumentDoesNotSay(String name, Exchange exchange) {
    assertThatThrownBy(() -> OpenApiContract.document().check(exchange))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("openapi");
  }

  @Test
  void theContractCheckAcceptsWhatTheDocumentSays() {
    assertThatCode(
            () ->
                OpenApiContract.document()
                    .check(
                        new Exchange(
                            "GET", CONFIG, null, null, null, 200, "application/json", CONFIG_BODY)))
        .doesNotThrowAnyException();
  }
}
