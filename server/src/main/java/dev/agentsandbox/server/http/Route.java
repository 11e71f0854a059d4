package dev.agentsandbox.server.http;

import java.util.Objects;

/**
 * One entry of the route table.
 *
 * @param method the HTTP method
 * @param path the path template; a segment {@code {name}} captures that segment
 * @param scope the token scope the route needs, or null for a public route (health, metrics)
 * @param handler what answers
 */
public record Route(String method, String path, String scope, Handler handler) {
  public Route {
    Objects.requireNonNull(method, "method");
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(handler, "handler");
    if (!path.startsWith("/")) {
      throw new IllegalArgumentException("route path must start with /: " + path);
    }
  }

  /** Whether anyone may call the route without a token. */
  public boolean isPublic() {
    return scope == null;
  }
}
