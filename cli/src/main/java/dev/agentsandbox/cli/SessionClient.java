package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

/**
 * The session endpoints over one {@link AdminApi} (docs/api.md, "Sessions"): open, a step streamed
 * as it runs (its lines to stdout and stderr, each refusal to stderr), files in and out, close.
 */
final class SessionClient {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** How long a step may stream: a session's hard cap. */
  static final Duration STEP_WAIT = Duration.ofHours(5);

  private final AdminApi api;
  private final Terminal terminal;

  SessionClient(AdminApi api, Terminal terminal) {
    this.api = api;
    this.terminal = terminal;
  }

  /** Opens a session; its run JSON, once it is ready for a step. */
  JsonNode open(Map<String, Object> body) throws IOException, InterruptedException {
    return api.call(
            "open a session of " + body.get("agent"),
            api.request(AdminApi.BASE + "/sessions", Duration.ofMinutes(5))
                .header("Content-Type", "application/json")
                .POST(AdminApi.json(body))
                .build())
        .json();
  }

  /** Starts a background step; the step as it was answered (202). */
  JsonNode start(String runId, Map<String, Object> body) throws IOException, InterruptedException {
    return api.call(
            "start a step in session " + runId,
            api.request(AdminApi.RUNS + "/" + runId + "/exec", Duration.ofMinutes(2))
                .header("Content-Type", "application/json")
                .POST(AdminApi.json(body))
                .build())
        .json();
  }

  /**
   * Runs a step and streams it: stdout lines to {@code out}, stderr lines to {@code err}, each
   * refused connection to {@code err} as {@code denied: HOST:PORT REASON}; returns its result. The
   * step's number is set in {@code started} as soon as the server names it.
   *
   * @throws IOException when the stream ended without a result (the server went away)
   */
  JsonNode exec(
      String runId,
      Map<String, Object> body,
      PrintWriter out,
      PrintWriter err,
      java.util.concurrent.atomic.AtomicInteger started)
      throws IOException, InterruptedException {
    HttpResponse<InputStream> response =
        api.stream(
            "run a step in session " + runId,
            api.request(AdminApi.RUNS + "/" + runId + "/exec", STEP_WAIT)
                .header("Content-Type", "application/json")
                .header("Accept", "application/x-ndjson")
                .POST(AdminApi.json(body))
                .build());
    try (InputStream stream = response.body();
        BufferedReader lines =
            new BufferedReader(new InputStreamReader(stream, StandardCharsets.UTF_8))) {
      String line;
      while ((line = lines.readLine()) != null) {
        if (line.isBlank()) {
          continue;
        }
        JsonNode tagged = JSON.readTree(line);
        if (tagged.has("step")) {
          started.set(tagged.get("step").asInt());
          continue;
        }
        if (tagged.has("result")) {
          return tagged.get("result");
        }
        if (tagged.has("egress")) {
          JsonNode decision = tagged.get("egress");
          if (decision.path("decision").asText().equals("deny")) {
            synchronized (err) {
              err.println(
                  terminal.red("denied:")
                      + " "
                      + decision.path("host").asText("?")
                      + ":"
                      + decision.path("port").asText("?")
                      + " "
                      + decision.path("reason").asText("?"));
              err.flush();
            }
          }
          continue;
        }
        PrintWriter to = tagged.has("stderr") ? err : out;
        String text =
            tagged.has("skipped_lines")
                ? "[agent-sandbox: "
                    + tagged.path("skipped_lines").asLong()
                    + " lines left the retained tail unread]\n"
                : tagged.path(tagged.has("stderr") ? "stderr" : "stdout").asText("");
        synchronized (to) {
          to.print(text);
          to.flush();
        }
      }
    }
    throw new IOException(
        "the stream of the step ended without its result (the server went away; the step goes on:"
            + " agent-sandbox session steps "
            + runId
            + ")");
  }

  /** Runs a step and answers its whole result when it ended (no streaming). */
  JsonNode execWhole(String runId, Map<String, Object> body)
      throws IOException, InterruptedException {
    return api.call(
            "run a step in session " + runId,
            api.request(AdminApi.RUNS + "/" + runId + "/exec", STEP_WAIT)
                .header("Content-Type", "application/json")
                .POST(AdminApi.json(body))
                .build())
        .json();
  }

  /** Kills a running step. */
  void kill(String runId, int step) throws IOException, InterruptedException {
    api.call(
        "kill step " + step + " of session " + runId,
        api.request(AdminApi.RUNS + "/" + runId + "/steps/" + step, Duration.ofSeconds(30))
            .DELETE()
            .build());
  }

  /** Writes one local file, or a tar, into the session's workspace; what the server wrote. */
  JsonNode put(String runId, String path, String type, HttpRequest.BodyPublisher body)
      throws IOException, InterruptedException {
    return api.call(
            "put " + path + " into session " + runId,
            api.request(
                    AdminApi.path(AdminApi.RUNS + "/" + runId + "/files", Map.of("path", path)),
                    Duration.ofMinutes(10))
                .header("Content-Type", type)
                .PUT(body)
                .build())
        .json();
  }

  /** Writes one local file. */
  JsonNode putFile(String runId, String path, Path file) throws IOException, InterruptedException {
    return put(runId, path, "application/octet-stream", HttpRequest.BodyPublishers.ofFile(file));
  }

  /**
   * Reads a file or a folder (as a tar) out of the session; the caller reads and closes the body,
   * whose {@code Content-Type} says which it is.
   */
  HttpResponse<InputStream> get(String runId, String path)
      throws IOException, InterruptedException {
    return api.stream(
        "get " + path + " from session " + runId,
        api.request(
                AdminApi.path(AdminApi.RUNS + "/" + runId + "/files", Map.of("path", path)),
                Duration.ofMinutes(10))
            .header("Accept", "application/x-tar, application/octet-stream")
            .GET()
            .build());
  }

  /** Closes the session; its result once its outputs are collected. */
  JsonNode close(String runId) throws IOException, InterruptedException {
    return api.call(
            "close session " + runId,
            api.request(AdminApi.RUNS + "/" + runId, Duration.ofMinutes(5)).DELETE().build())
        .json();
  }

  /** The session's steps, in order (summaries). */
  JsonNode steps(String runId) throws IOException, InterruptedException {
    return api.get(
        "list the steps of session " + runId,
        AdminApi.path(AdminApi.RUNS + "/" + runId + "/steps", Map.of("limit", "10000")));
  }
}
