package dev.agentsandbox.server.run;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.runs.RunNotFoundException;
import dev.agentsandbox.runs.RunService;
import dev.agentsandbox.runs.json.Json;
import dev.agentsandbox.server.http.ApiException;
import dev.agentsandbox.server.http.Request;
import dev.agentsandbox.server.http.Response;
import java.util.Set;

/**
 * {@code GET .../runs/{id}/timeline}: one run's audit trail answering the playbook's four questions
 * — who launched it, what ran, what was allowed and denied, and when and how it died — built by the
 * runs module from the run's typed events ({@code RunTimeline}), served as its document.
 */
public final class TimelineEndpoints {
  private final RunService runs;
  private final ObjectMapper mapper;

  public TimelineEndpoints(RunService runs, ObjectMapper mapper) {
    this.runs = runs;
    this.mapper = mapper;
  }

  /** {@code GET .../runs/{id}/timeline}. */
  public Response timeline(Request request) {
    request.onlyQueryParams(Set.of());
    String id = request.pathParam("id");
    try {
      return Response.json(200, Json.bytes(mapper, runs.timeline(id).toJson(mapper)));
    } catch (RunNotFoundException e) {
      throw new ApiException(
          404,
          "run_not_found",
          "read the timeline of a run: no run has this id (list runs with GET .../runs)");
    }
  }
}
