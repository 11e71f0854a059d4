package dev.agentsandbox.server.run;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.credentials.JwtIssuer;
import dev.agentsandbox.runs.json.Json;
import dev.agentsandbox.server.http.ApiException;
import dev.agentsandbox.server.http.Request;
import dev.agentsandbox.server.http.Response;
import java.util.Optional;
import java.util.Set;

/**
 * {@code GET .../credentials/jwks}: the public halves of the keys that sign run JWTs, as a JWK set,
 * for gateways that verify them (pick the key by the token header's {@code kid}). Public: public
 * keys are no secret, and a verifier should not need a token of this control plane.
 */
public final class JwksEndpoint {
  private final Optional<JwtIssuer> jwt;
  private final ObjectMapper mapper;

  public JwksEndpoint(Optional<JwtIssuer> jwt, ObjectMapper mapper) {
    this.jwt = jwt;
    this.mapper = mapper;
  }

  /** The JWK set, or 404 when no signing keys are configured. */
  public Response keys(Request request) {
    request.onlyQueryParams(Set.of());
    JwtIssuer issuer =
        jwt.orElseThrow(
            () ->
                new ApiException(
                    404,
                    "jwt_not_configured",
                    "read the JWT verification keys: this control plane signs no JWTs (serve"
                        + " --jwt-keys FILE --jwt-active-kid KID)"));
    return Response.json(200, Json.bytes(mapper, mapper.valueToTree(issuer.keys().publicJwks())))
        .withHeader("Cache-Control", "max-age=300");
  }
}
