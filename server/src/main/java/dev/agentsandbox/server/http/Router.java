package dev.agentsandbox.server.http;

import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** The one route table: finds the route for a method and path, or says why there is none. */
public final class Router {
  private final List<Route> routes;

  public Router(List<Route> routes) {
    this.routes = List.copyOf(routes);
  }

  /** A matched route and the path segments it captured. */
  public record Match(Route route, Map<String, String> params) {
    public Match {
      params = Map.copyOf(params);
    }
  }

  /**
   * The route for {@code method} and {@code path}.
   *
   * @throws ApiException 404 when no route has the path, 405 (naming the allowed methods) when
   *     routes have it for other methods
   */
  public Match match(String method, String path) {
    Set<String> allowed = new LinkedHashSet<>();
    for (Route route : routes) {
      Map<String, String> params = matchPath(route.path(), path);
      if (params == null) {
        continue;
      }
      if (route.method().equals(method)) {
        return new Match(route, params);
      }
      allowed.add(route.method());
    }
    if (allowed.isEmpty()) {
      throw new ApiException(404, "not_found", "no endpoint at " + Echo.bounded(path));
    }
    throw new ApiException(
        405,
        "method_not_allowed",
        method
            + " is not allowed on "
            + Echo.bounded(path)
            + " (allowed: "
            + String.join(", ", allowed)
            + ")",
        Map.of("allow", List.copyOf(allowed)));
  }

  /** The templates of every route, for bounded metric labels. */
  public List<Route> routes() {
    return routes;
  }

  private static Map<String, String> matchPath(String template, String path) {
    String[] want = template.split("/", -1);
    String[] have = path.split("/", -1);
    if (want.length != have.length) {
      return null;
    }
    Map<String, String> params = new LinkedHashMap<>();
    for (int i = 0; i < want.length; i++) {
      if (want[i].startsWith("{") && want[i].endsWith("}") && !have[i].isEmpty()) {
        params.put(want[i].substring(1, want[i].length() - 1), have[i]);
      } else if (!want[i].equals(have[i])) {
        return null;
      }
    }
    return params;
  }
}
