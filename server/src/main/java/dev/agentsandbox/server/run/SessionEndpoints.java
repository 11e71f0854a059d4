package dev.agentsandbox.server.run;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.runs.RunOutput;
import dev.agentsandbox.runs.RunService;
import dev.agentsandbox.runs.RunningStep;
import dev.agentsandbox.runs.Sessions;
import dev.agentsandbox.runs.json.Json;
import dev.agentsandbox.runs.session.FileForm;
import dev.agentsandbox.runs.session.FileRead;
import dev.agentsandbox.runs.session.SessionError;
import dev.agentsandbox.runs.session.SessionRefusedException;
import dev.agentsandbox.runs.session.StepView;
import dev.agentsandbox.server.http.ApiException;
import dev.agentsandbox.server.http.Request;
import dev.agentsandbox.server.http.Response;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The session endpoints (docs/api.md, "Sessions"): open, exec (JSON, or NDJSON streamed as the step
 * runs, or 202 for a background step), the steps and their output, a step's kill, and the files put
 * in and taken out, whose bodies are not JSON and may pass the JSON body limit (each bounded by the
 * agent's own cap instead). Each is a line of {@code ApiRoutes}.
 */
public final class SessionEndpoints {
  static final String NDJSON = "application/x-ndjson";
  static final String TAR = "application/x-tar";
  static final String OCTETS = "application/octet-stream";

  /** How long a streamed step waits for new lines before it looks for decisions again. */
  private static final long STREAM_POLL_MILLIS = 250;

  private final Sessions sessions;
  private final ObjectMapper mapper;
  private final RunJson runs;
  private final SessionJson render;
  private final OutputFollower follower;

  public SessionEndpoints(RunService runs, ObjectMapper mapper) {
    this.sessions = runs.sessions();
    this.mapper = mapper;
    this.runs = new RunJson(mapper);
    this.render = new SessionJson(mapper);
    this.follower = new OutputFollower(mapper);
  }

  /** {@code POST .../sessions}: answers 201 once the sandbox is ready for a step. */
  public Response open(Request request) throws IOException {
    request.onlyQueryParams(Set.of());
    var ask = SessionRequestReader.open(request.jsonBody());
    try {
      var opened = sessions.open(request.principal().name(), request.principal().agents(), ask);
      String self = request.path().replace("/sessions", "/runs/" + opened.record().runId());
      return Response.json(201, Json.bytes(mapper, runs.run(opened))).withHeader("Location", self);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted while opening the session");
    }
  }

  /** {@code POST .../runs/{id}/exec}. */
  public Response exec(Request request) throws IOException {
    request.onlyQueryParams(Set.of());
    String id = RunEndpoints.runId(request);
    var step = SessionRequestReader.exec(request.jsonBody());
    RunningStep running = sessions.exec(request.principal().name(), id, step);
    if (step.background()) {
      String self = request.path().replace("/exec", "/steps/" + running.number());
      return Response.json(
              202, Json.bytes(mapper, render.step(sessions.step(id, running.number()))))
          .withHeader("Location", self);
    }
    if (request.header("Accept").orElse("").toLowerCase(Locale.ROOT).contains(NDJSON)) {
      return Response.streaming(200, NDJSON, out -> stream(running, out));
    }
    try {
      return Response.json(200, Json.bytes(mapper, render.step(running.await())));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      running.clientGone();
      throw new InterruptedIOException("interrupted while waiting for the step");
    }
  }

  /**
   * A step streamed as it runs: its number, its lines and its decisions as they come, then its
   * result.
   */
  private void stream(RunningStep step, OutputStream out) throws IOException {
    long seq = 0;
    int decisions = 0;
    try {
      // First its number, so that a client can kill it or read it later whatever happens.
      out.write(follower.line("step", mapper.getNodeFactory().numberNode(step.number())));
      out.flush();
      while (true) {
        RunOutput.Chunk chunk;
        try {
          chunk = step.output().read(seq, STREAM_POLL_MILLIS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          step.clientGone();
          return;
        }
        seq = follower.writeTagged(chunk, out);
        decisions = decisions(step, decisions, out);
        out.flush();
        if (chunk.finished()) {
          break;
        }
      }
      StepView result;
      try {
        result = step.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        step.clientGone();
        return;
      }
      decisions(step, decisions, out);
      out.write(follower.line("result", render.step(result)));
      out.flush();
    } catch (IOException e) {
      // The client went away: the step goes on, and its row says so.
      step.clientGone();
      throw e;
    }
  }

  private int decisions(RunningStep step, int seen, OutputStream out) throws IOException {
    List<java.util.Map<String, Object>> fresh = step.decisionsFrom(seen);
    for (java.util.Map<String, Object> decision : fresh) {
      out.write(follower.line("egress", mapper.valueToTree(decision)));
    }
    return seen + fresh.size();
  }

  /**
   * {@code GET .../runs/{id}/steps}: summaries in order, paged by {@code after} and {@code limit}.
   */
  public Response steps(Request request) {
    request.onlyQueryParams(Set.of("after", "limit"));
    String id = RunEndpoints.runId(request);
    int after = number(request.query().get("after"), 0, 0, Integer.MAX_VALUE, "after");
    int limit = number(request.query().get("limit"), 1000, 1, 10_000, "limit");
    return Response.json(
        200, Json.bytes(mapper, render.steps(id, sessions.steps(id, after, limit))));
  }

  /** {@code GET .../runs/{id}/steps/{n}}. */
  public Response step(Request request) {
    request.onlyQueryParams(Set.of());
    String id = RunEndpoints.runId(request);
    return Response.json(
        200, Json.bytes(mapper, render.step(sessions.step(id, stepNumber(request, id)))));
  }

  /** {@code GET .../runs/{id}/steps/{n}/output}: streamed until the step ends. */
  public Response stepOutput(Request request) {
    request.onlyQueryParams(Set.of());
    String id = RunEndpoints.runId(request);
    RunOutput output = sessions.stepOutput(id, stepNumber(request, id));
    boolean tagged = request.header("Accept").orElse("").toLowerCase(Locale.ROOT).contains(NDJSON);
    return Response.streaming(
        200,
        tagged ? NDJSON : "text/plain; charset=utf-8",
        out -> follower.follow(output, out, tagged));
  }

  /** {@code DELETE .../runs/{id}/steps/{n}}: 202 once the kill is asked. */
  public Response killStep(Request request) {
    request.onlyQueryParams(Set.of());
    String id = RunEndpoints.runId(request);
    int number = stepNumber(request, id);
    sessions.killStep(request.principal().name(), id, number);
    ObjectNode body = mapper.createObjectNode();
    body.put("run_id", id);
    body.put("step", number);
    body.put("status", "killing");
    return Response.json(202, Json.bytes(mapper, body));
  }

  /** {@code PUT .../runs/{id}/files?path=P}: one file, or a tar under a folder. */
  public Response putFiles(Request request) throws IOException {
    request.onlyQueryParams(Set.of("path"));
    String id = RunEndpoints.runId(request);
    String type = request.mediaType();
    boolean tar;
    if (type.isEmpty() || type.equals(OCTETS)) {
      tar = false;
    } else if (type.equals(TAR)) {
      tar = true;
    } else {
      throw new ApiException(
          415,
          "unsupported_media_type",
          "put a file into session "
              + id
              + ": Content-Type must be application/octet-stream (one file) or application/x-tar"
              + " (a folder)");
    }
    try (InputStream body = request.rawBody()) {
      return Response.json(
          200,
          Json.bytes(
              mapper,
              render.written(
                  sessions.put(
                      request.principal().name(),
                      id,
                      request.query().get("path"),
                      tar,
                      body,
                      request.declaredLength()))));
    }
  }

  /**
   * {@code GET .../runs/{id}/files?path=P}: a file's bytes; a folder as a tar ({@code Accept:
   * application/x-tar}) or its listing ({@code Accept: application/json}). Each was read whole
   * first, so its length and hash are sent before its first byte.
   */
  public Response getFiles(Request request) {
    request.onlyQueryParams(Set.of("path"));
    String id = RunEndpoints.runId(request);
    String accept = request.header("Accept").orElse("").toLowerCase(Locale.ROOT);
    FileForm form =
        accept.contains(TAR)
            ? FileForm.TAR
            : accept.contains("application/json") ? FileForm.LISTING : FileForm.FILE;
    FileRead read = sessions.get(request.principal().name(), id, request.query().get("path"), form);
    if (read instanceof FileRead.Listing listing) {
      return Response.json(200, Json.bytes(mapper, render.listing(listing)));
    }
    FileRead.Bytes bytes = (FileRead.Bytes) read;
    Response response =
        Response.streaming(
                200,
                bytes.tar() ? TAR : OCTETS,
                bytes.size(),
                out -> {
                  try (bytes;
                      InputStream in = bytes.open()) {
                    in.transferTo(out);
                  }
                })
            .withHeader("X-Agent-Sandbox-Sha256", bytes.sha256())
            .withHeader("Content-Disposition", "attachment");
    return bytes.tar()
        ? response.withHeader("X-Agent-Sandbox-Skipped", Integer.toString(bytes.skipped()))
        : response;
  }

  private static int stepNumber(Request request, String runId) {
    String raw = request.pathParam("n");
    try {
      int number = Integer.parseInt(raw);
      if (number >= 1) {
        return number;
      }
    } catch (NumberFormatException e) {
      // Falls through to the same answer as a number out of range.
    }
    throw new SessionRefusedException(
        SessionError.STEP_NOT_FOUND,
        "find a step of session "
            + runId
            + ": steps are numbered from 1 (list them with GET .../steps)");
  }

  private static int number(String raw, int absent, int min, int max, String name) {
    if (raw == null) {
      return absent;
    }
    try {
      int value = Integer.parseInt(raw);
      if (value >= min && value <= max) {
        return value;
      }
    } catch (NumberFormatException e) {
      // Falls through to the same answer as an out-of-range number.
    }
    throw ApiException.badRequest(name + " must be a whole number from " + min + " to " + max);
  }
}
