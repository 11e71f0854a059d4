package dev.agentsandbox.server;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.SandboxBackend;
import dev.agentsandbox.server.http.Json;
import dev.agentsandbox.server.http.Request;
import dev.agentsandbox.server.http.Response;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * {@code GET .../backends}: every backend this control plane was started with, probed now, in the
 * order {@code auto} prefers them. What the console's overview shows; the same probe a run makes.
 */
final class BackendEndpoints {
  private final List<SandboxBackend> backends;
  private final ObjectMapper mapper;

  BackendEndpoints(List<SandboxBackend> backends, ObjectMapper mapper) {
    this.backends = List.copyOf(backends);
    this.mapper = mapper;
  }

  Response list(Request request) {
    request.onlyQueryParams(Set.of());
    ObjectNode body = mapper.createObjectNode();
    ArrayNode list = body.putArray("backends");
    for (SandboxBackend backend : backends) {
      Probe probe = backend.probe();
      ObjectNode item = list.addObject();
      item.put("backend", probe.backend());
      item.put("available", probe.available());
      // A probe's isolation and runtime mean something only where the backend can run.
      item.put(
          "isolation",
          probe.available() ? probe.isolation().name().toLowerCase(Locale.ROOT) : null);
      item.put("runtime", probe.available() ? probe.runtime() : null);
      item.put("detail", probe.detail());
    }
    return Response.json(200, Json.bytes(mapper, body));
  }
}
