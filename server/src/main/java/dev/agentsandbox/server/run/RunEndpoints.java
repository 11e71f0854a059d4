package dev.agentsandbox.server.run;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.agentsandbox.runs.RunIds;
import dev.agentsandbox.runs.RunOutput;
import dev.agentsandbox.runs.RunRequest;
import dev.agentsandbox.runs.RunService;
import dev.agentsandbox.runs.json.Json;
import dev.agentsandbox.server.audit.AuditEndpoints;
import dev.agentsandbox.server.http.ApiException;
import dev.agentsandbox.server.http.Request;
import dev.agentsandbox.server.http.Response;
import dev.agentsandbox.store.RunKind;
import dev.agentsandbox.store.RunStatus;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Instant;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The run endpoints: {@code plan}, {@code run} (waits for the end), and the asynchronous {@code
 * runs} collection with its output stream and kill.
 */
public final class RunEndpoints {
  private final RunService runs;
  private final ObjectMapper mapper;
  private final RunJson render;
  private final YAMLMapper yaml = new YAMLMapper();
  private final OutputFollower follower;

  public RunEndpoints(RunService runs, ObjectMapper mapper) {
    this.runs = runs;
    this.mapper = mapper;
    this.render = new RunJson(mapper);
    this.follower = new OutputFollower(mapper);
  }

  /** {@code POST .../plan}: what a run would create; YAML with {@code Accept: application/yaml}. */
  public Response plan(Request request) throws IOException {
    RunRequest run = RunRequestReader.read(request.jsonBody());
    ObjectNode plan = render.plan(runs.plan(run, request.principal().agents()));
    String accept = request.header("Accept").orElse("").toLowerCase(Locale.ROOT);
    if (accept.contains("application/yaml") || accept.contains("application/x-yaml")) {
      return Response.text(200, "application/yaml", yaml.writeValueAsString(plan));
    }
    return Response.json(200, Json.bytes(mapper, plan));
  }

  /** {@code POST .../run}: runs and answers when the run has ended. */
  public Response run(Request request) throws IOException {
    RunRequest run = RunRequestReader.read(request.jsonBody());
    try {
      return Response.json(
          200,
          Json.bytes(
              mapper,
              render.run(runs.run(request.principal().name(), request.principal().agents(), run))));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted while waiting for the run");
    }
  }

  /** {@code POST .../runs}: starts a run and answers 202 at once with its id. */
  public Response start(Request request) throws IOException {
    RunRequest run = RunRequestReader.read(request.jsonBody());
    String runId = runs.start(request.principal().name(), request.principal().agents(), run);
    ObjectNode body = mapper.createObjectNode();
    body.put("run_id", runId);
    body.put("status", "pending");
    String self = request.path() + "/" + runId;
    body.put("href", self);
    body.put("output", self + "/output");
    return Response.json(202, Json.bytes(mapper, body)).withHeader("Location", self);
  }

  /** {@code GET .../runs}: the newest runs, filtered by agent, status, creation time and labels. */
  public Response list(Request request) {
    request.onlyQueryParams(Set.of("limit", "agent", "status", "since", "label", "kind"));
    int limit = limit(request.query().get("limit"));
    String status = request.query().get("status");
    RunStatus wanted;
    try {
      wanted = status == null ? null : RunStatus.fromWireName(status);
    } catch (IllegalArgumentException e) {
      throw ApiException.badRequest(
          "status must be one of pending, running, exited, deadline, killed, failed, closed");
    }
    String kindName = request.query().get("kind");
    RunKind kind;
    try {
      kind = kindName == null ? null : RunKind.fromWireName(kindName);
    } catch (IllegalArgumentException e) {
      throw ApiException.badRequest("kind must be run or session");
    }
    Instant since = AuditEndpoints.since(request.query().get("since"), Instant.now());
    String label = request.query().get("label");
    Map<String, String> labels =
        AuditEndpoints.labels(label == null || label.isBlank() ? null : label);
    return Response.json(
        200,
        Json.bytes(
            mapper,
            render.list(
                runs.recent(
                    request.principal().agents(),
                    request.query().get("agent"),
                    wanted,
                    kind,
                    since,
                    labels,
                    limit))));
  }

  /** {@code GET .../runs/{id}}: the run's state and, once ended, its result. */
  public Response get(Request request) {
    request.onlyQueryParams(Set.of());
    return Response.json(200, Json.bytes(mapper, render.run(runs.view(runId(request)))));
  }

  /**
   * {@code DELETE .../runs/{id}}: kills a live run (202); closes a session and answers its result
   * once its outputs are collected and its rows written (200).
   */
  public Response kill(Request request) throws IOException {
    String id = runId(request);
    if (runs.sessions().isSession(id)) {
      try {
        return Response.json(
            200,
            Json.bytes(mapper, render.run(runs.sessions().close(request.principal().name(), id))));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("interrupted while closing the session");
      }
    }
    boolean killing = runs.kill(request.principal().name(), id);
    if (!killing) {
      throw new ApiException(
          409, "run_ended", "kill run " + id + ": it has already ended (GET it for the result)");
    }
    ObjectNode body = mapper.createObjectNode();
    body.put("run_id", id);
    body.put("status", "killing");
    return Response.json(202, Json.bytes(mapper, body));
  }

  /**
   * {@code GET .../runs/{id}/output}: the run's redacted output, streamed until the run ends: plain
   * text (both streams as one), or with {@code Accept: application/x-ndjson} one JSON object per
   * line saying which stream it came from. Lines that left the retained tail before they were read
   * are announced, not lost silently.
   */
  public Response output(Request request) {
    request.onlyQueryParams(Set.of());
    RunOutput output = runs.output(runId(request));
    String accept = request.header("Accept").orElse("").toLowerCase(Locale.ROOT);
    if (accept.contains("application/x-ndjson")) {
      return Response.streaming(
          200, "application/x-ndjson", out -> follower.follow(output, out, true));
    }
    return Response.streaming(
        200, "text/plain; charset=utf-8", out -> follower.follow(output, out, false));
  }

  static String runId(Request request) {
    String id = request.pathParam("id");
    if (!RunIds.valid(id)) {
      throw new ApiException(
          404,
          "run_not_found",
          "find run: the id is not a run id (ids are lower-case letters and digits)");
    }
    return id;
  }

  private static int limit(String raw) {
    if (raw == null) {
      return 50;
    }
    try {
      int limit = Integer.parseInt(raw);
      if (limit >= 1 && limit <= 500) {
        return limit;
      }
    } catch (NumberFormatException e) {
      // Falls through to the same answer as an out-of-range number.
    }
    throw ApiException.badRequest("limit must be a whole number from 1 to 500");
  }
}
