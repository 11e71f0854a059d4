package dev.agentsandbox.server.http;

import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.store.TokenInfo;
import dev.agentsandbox.store.TokenStore;
import java.util.Map;
import java.util.Optional;

/** Turns an {@code Authorization: Bearer} header into a token and checks a route's scope. */
public final class Authenticator {
  private static final String BEARER = "bearer ";

  private final TokenStore tokens;

  public Authenticator(TokenStore tokens) {
    this.tokens = tokens;
  }

  /**
   * The token presented, holding {@code scope}.
   *
   * @throws ApiException 401 when the header is missing or the token unknown, revoked or expired;
   *     403 naming the scope when the token lacks it
   */
  public TokenInfo authorize(Optional<String> authorization, String scope) {
    return authorize(authorization, scope, Optional.empty());
  }

  /**
   * Like {@link #authorize(Optional, String)}, and also accepts the own token of run {@code runId}
   * (scope {@code agent_sandbox.run.<runId>}) in place of {@code scope}.
   */
  public TokenInfo authorize(Optional<String> authorization, String scope, Optional<String> runId) {
    String header = authorization.orElse("").trim();
    if (header.isEmpty()) {
      throw new ApiException(
          401,
          "missing_token",
          "authenticate: no Authorization header (send Authorization: Bearer TOKEN)");
    }
    if (header.length() <= BEARER.length()
        || !header.regionMatches(true, 0, BEARER, 0, BEARER.length())) {
      throw new ApiException(
          401,
          "missing_token",
          "authenticate: the Authorization header is not a bearer token (send Authorization:"
              + " Bearer TOKEN)");
    }
    String secret = header.substring(BEARER.length()).trim();
    TokenInfo token =
        tokens
            .authenticate(secret)
            .orElseThrow(
                () ->
                    new ApiException(
                        401,
                        "invalid_token",
                        "authenticate: the token is unknown, revoked or expired (create one with"
                            + " agent-sandbox token create)"));
    if (runId.isPresent() && token.scopes().contains(TokenStore.runScope(runId.get()))) {
      return token;
    }
    requireScope(token, scope);
    return token;
  }

  /**
   * Checks that the token holds {@code scope} ({@link Scopes#ANY_TOKEN}: any valid token does). A
   * token limited to agents never holds an instance-wide scope, whatever it was created with: the
   * command line refuses to create one, and this refuses to use one.
   *
   * @throws ApiException 403 naming the missing scope
   */
  public static void requireScope(TokenInfo token, String scope) {
    if (scope.equals(Scopes.ANY_TOKEN)) {
      return;
    }
    if (token.agents().limited() && !Scopes.AGENT_SCOPED.contains(scope)) {
      throw new ApiException(
          403,
          "missing_scope",
          "token '"
              + token.name()
              + "' is limited to agents "
              + String.join(", ", token.agents().named())
              + " and cannot use the instance-wide scope "
              + scope
              + " (use a token of every agent)",
          Map.of("missing_scope", scope));
    }
    if (!token.scopes().contains(scope)) {
      throw new ApiException(
          403,
          "missing_scope",
          "token '"
              + token.name()
              + "' lacks the scope "
              + scope
              + " (create a token with --scopes "
              + scope
              + ")",
          Map.of("missing_scope", scope));
    }
  }
}
