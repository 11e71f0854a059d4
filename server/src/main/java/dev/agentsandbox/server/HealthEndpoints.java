package dev.agentsandbox.server;

import dev.agentsandbox.server.http.ApiException;
import dev.agentsandbox.server.http.Request;
import dev.agentsandbox.server.http.Response;
import dev.agentsandbox.store.Store;
import java.nio.charset.StandardCharsets;

/** Liveness and readiness; public, for load balancers and orchestrators. */
final class HealthEndpoints {
  private final Store store;

  HealthEndpoints(Store store) {
    this.store = store;
  }

  Response live(Request request) {
    return Response.json(200, "{\"status\":\"ok\"}".getBytes(StandardCharsets.UTF_8));
  }

  Response ready(Request request) {
    boolean reachable;
    try {
      reachable = store.ping();
    } catch (RuntimeException e) {
      reachable = false;
    }
    if (!reachable) {
      throw new ApiException(
          503, "store_unavailable", "ping the " + store.dialect() + " store: not reachable");
    }
    return Response.json(
        200,
        ("{\"status\":\"ready\",\"store\":\"" + store.dialect() + "\"}")
            .getBytes(StandardCharsets.UTF_8));
  }
}
