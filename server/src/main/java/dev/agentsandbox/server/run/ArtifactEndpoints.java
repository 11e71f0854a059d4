package dev.agentsandbox.server.run;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.artifacts.ArtifactPath;
import dev.agentsandbox.artifacts.ArtifactStore;
import dev.agentsandbox.artifacts.StoredArtifact;
import dev.agentsandbox.runs.RunIds;
import dev.agentsandbox.runs.json.Json;
import dev.agentsandbox.server.http.ApiException;
import dev.agentsandbox.server.http.Request;
import dev.agentsandbox.server.http.Response;
import dev.agentsandbox.store.Store;
import java.io.InputStream;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.Set;

/**
 * A run's artifacts: the files it left in {@code /workspace/out}, kept for review. {@code GET
 * .../runs/{id}/artifacts} lists them (path, size, SHA-256); {@code GET
 * .../runs/{id}/artifacts/file?path=P} downloads one as {@code application/octet-stream}, with its
 * hash in {@code X-Agent-Sandbox-Sha256} so a reviewer can check what they got.
 */
public final class ArtifactEndpoints {
  private final Optional<ArtifactStore> artifacts;
  private final Store store;
  private final ObjectMapper mapper;

  public ArtifactEndpoints(Optional<ArtifactStore> artifacts, Store store, ObjectMapper mapper) {
    this.artifacts = artifacts;
    this.store = store;
    this.mapper = mapper;
  }

  /** {@code GET .../runs/{id}/artifacts}. */
  public Response list(Request request) {
    request.onlyQueryParams(Set.of());
    String runId = knownRun(request);
    ObjectNode body = mapper.createObjectNode();
    body.put("run_id", runId);
    ArrayNode list = body.putArray("artifacts");
    if (artifacts.isEmpty()) {
      body.put("store", "none");
      return Response.json(200, Json.bytes(mapper, body));
    }
    body.put("store", artifacts.get().describe());
    for (StoredArtifact a : artifacts.get().list(runId)) {
      list.addObject()
          .put("path", a.path())
          .put("size", a.size())
          .put("sha256", a.sha256())
          .put(
              "href",
              request.path() + "/file?path=" + URLEncoder.encode(a.path(), StandardCharsets.UTF_8));
    }
    return Response.json(200, Json.bytes(mapper, body));
  }

  /** {@code GET .../runs/{id}/artifacts/file?path=P}. */
  public Response download(Request request) {
    request.onlyQueryParams(Set.of("path"));
    String runId = knownRun(request);
    String path = request.query().get("path");
    if (path == null) {
      throw ApiException.badRequest("download an artifact: the path query parameter is required");
    }
    Optional<String> problem = ArtifactPath.problem(path);
    if (problem.isPresent()) {
      throw ApiException.badRequest("download an artifact: invalid path (" + problem.get() + ")");
    }
    ArtifactStore store = artifacts.orElseThrow(() -> notFound(runId, path));
    StoredArtifact listed =
        store.list(runId).stream()
            .filter(a -> a.path().equals(path))
            .findFirst()
            .orElseThrow(() -> notFound(runId, path));
    InputStream in = store.open(runId, path);
    return Response.streaming(
            200,
            "application/octet-stream",
            out -> {
              try (in) {
                in.transferTo(out);
              }
            })
        .withHeader("X-Agent-Sandbox-Sha256", listed.sha256())
        .withHeader("Content-Disposition", "attachment")
        .withHeader("X-Content-Type-Options", "nosniff");
  }

  private String knownRun(Request request) {
    String id = request.pathParam("id");
    if (!RunIds.valid(id) || store.runs().find(id).isEmpty()) {
      throw new ApiException(
          404, "run_not_found", "find run: no run has this id (list runs with GET .../runs)");
    }
    return id;
  }

  private static ApiException notFound(String runId, String path) {
    return new ApiException(
        404,
        "artifact_not_found",
        "download artifact of run "
            + runId
            + ": no artifact has this path (list them with GET .../runs/"
            + runId
            + "/artifacts)");
  }
}
