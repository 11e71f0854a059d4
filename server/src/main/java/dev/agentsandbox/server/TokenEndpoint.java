package dev.agentsandbox.server;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.runs.json.Json;
import dev.agentsandbox.server.http.Request;
import dev.agentsandbox.server.http.Response;
import dev.agentsandbox.store.TokenInfo;
import java.util.Set;

/**
 * {@code GET /api/admin/platform/token}: the token presented, as the store knows it (its name,
 * scopes, the agents it is limited to, its times; never its secret), so that the console and the
 * clients can say who is signed in and what it may touch. Any valid token may ask.
 */
final class TokenEndpoint {
  static final String PATH = "/api/admin/platform/token";

  private final ObjectMapper mapper;

  TokenEndpoint(ObjectMapper mapper) {
    this.mapper = mapper;
  }

  Response self(Request request) {
    request.onlyQueryParams(Set.of());
    TokenInfo token = request.principal();
    ObjectNode body = mapper.createObjectNode();
    body.put("name", token.name());
    ArrayNode scopes = body.putArray("scopes");
    token.scopes().forEach(scopes::add);
    if (token.agents().limited()) {
      ArrayNode agents = body.putArray("agents");
      token.agents().named().forEach(agents::add);
    } else {
      body.putNull("agents");
    }
    body.put("created_at", token.createdAt().toString());
    body.put("expires_at", token.expiresAt() == null ? null : token.expiresAt().toString());
    return Response.json(200, Json.bytes(mapper, body));
  }
}
