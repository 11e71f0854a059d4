package dev.agentsandbox.server;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.ProbeCache;
import dev.agentsandbox.backend.SandboxBackend;
import dev.agentsandbox.runs.json.Json;
import dev.agentsandbox.server.http.Request;
import dev.agentsandbox.server.http.Response;
import java.time.Instant;
import java.util.Locale;
import java.util.Set;

/**
 * {@code GET .../backends}: every backend this control plane was started with, in the order {@code
 * auto} prefers them, with what its last probe found. The probes run in the background ({@link
 * ProbeCache}); this answers at once, and says when a backend's first probe is still running
 * ({@code available: false}, {@code probe_running: true}, {@code probed_at: null}). What the
 * console's overview shows; the answers a run's {@code auto} acts on.
 */
final class BackendEndpoints {
  private final ProbeCache probes;
  private final ObjectMapper mapper;

  BackendEndpoints(ProbeCache probes, ObjectMapper mapper) {
    this.probes = probes;
    this.mapper = mapper;
  }

  Response list(Request request) {
    request.onlyQueryParams(Set.of());
    ObjectNode body = mapper.createObjectNode();
    ArrayNode list = body.putArray("backends");
    Instant now = Instant.now();
    for (SandboxBackend backend : probes.backends()) {
      ProbeCache.Status status = probes.status(backend);
      Probe probe = status.probe(now);
      ObjectNode item = list.addObject();
      item.put("backend", probe.backend());
      item.put("available", probe.available());
      // A probe's isolation and runtime mean something only where the backend can run.
      item.put(
          "isolation",
          probe.available() ? probe.isolation().name().toLowerCase(Locale.ROOT) : null);
      item.put("runtime", probe.available() ? probe.runtime() : null);
      item.put("detail", probe.detail());
      item.put("probe_running", status.running());
      item.put("probed_at", status.answeredAt().map(Instant::toString).orElse(null));
    }
    return Response.json(200, Json.bytes(mapper, body));
  }
}
