package dev.agentsandbox.server.http;

import java.util.Objects;

/**
 * One entry of the route table.
 *
 * @param method the HTTP method
 * @param path the path template; a segment {@code {name}} captures that segment
 * @param scope the token scope the route needs, or null for a public route (health, metrics)
 * @param handler what answers
 * @param runSelf whether a run's own token (scope {@code agent_sandbox.run.<id>}) may call it for
 *     the run its path's {@code {id}} names, in place of {@code scope}
 */
public record Route(String method, String path, String scope, Handler handler, boolean runSelf) {
  public Route {
    Objects.requireNonNull(method, "method");
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(handler, "handler");
    if (runSelf && !path.contains("{id}")) {
      throw new IllegalArgumentException("a run's own route needs an {id} segment: " + path);
    }
    if (!path.startsWith("/")) {
      throw new IllegalArgumentException("route path must start with /: " + path);
    }
  }

  /** A route only tokens holding {@code scope} may call. */
  public Route(String method, String path, String scope, Handler handler) {
    this(method, path, scope, handler, false);
  }

  /** Whether anyone may call the route without a token. */
  public boolean isPublic() {
    return scope == null;
  }
}
