package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.Reader;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import sun.misc.Signal;

/**
 * Follows one run the way {@code docker run} follows a container: its output to stdout as it
 * arrives, each egress refusal to stderr as the proxy makes it, and the run's end as the exit code.
 * Ctrl-C asks the server to kill the run and keeps following until it has ended; a second Ctrl-C
 * stops waiting.
 *
 * <p>The output comes from the streamed {@code /output} endpoint, each line tagged with the stream
 * it came from, so the workload's standard error goes to stderr where the backend keeps it apart
 * (Docker); refusals from polling the run, whose {@code egress} list grows while it is live (the
 * same decisions the proxy reports and the audit log records).
 */
final class RunFollower {
  static final Set<String> ENDED = Set.of("exited", "deadline", "killed", "failed", "closed");

  private static final ObjectMapper JSON = new ObjectMapper();

  /** How often the run is polled for new decisions while its output streams. */
  private static final Duration POLL = Duration.ofMillis(500);

  /** How long a run may stay pending before a person at a terminal is told it still is. */
  private static final Duration PENDING_NOTICE = Duration.ofSeconds(3);

  /** How long to wait for the run's end once its output ended (teardown included). */
  private static final Duration END_WAIT = Duration.ofMinutes(2);

  private final AdminApi api;
  private final String runId;
  private final PrintWriter out;
  private final PrintWriter err;
  private final Terminal terminal;
  private final AtomicBoolean killAsked = new AtomicBoolean();
  private final AtomicBoolean announcedStart = new AtomicBoolean();
  private final AtomicBoolean announcedPending = new AtomicBoolean();
  private final Instant followedSince = Instant.now();
  private int decisionsSeen;

  RunFollower(AdminApi api, String runId, PrintWriter out, PrintWriter err, Terminal terminal) {
    this.api = api;
    this.runId = runId;
    this.out = out;
    this.err = err;
    this.terminal = terminal;
  }

  /** Follows the run to its end; returns the command's exit code. */
  int follow() throws IOException, InterruptedException {
    Thread poller = Thread.ofVirtual().name("decisions-" + runId).start(this::pollDecisions);
    try {
      copyOutput(api.output("follow the output of run " + runId, runId), out, err, terminal);
    } catch (IOException e) {
      poller.interrupt();
      err.println(
          "agent-sandbox run: lost the output of run "
              + runId
              + ": "
              + e.getMessage()
              + " (the run may still be live: agent-sandbox runs get "
              + runId
              + ")");
      err.flush();
      return ExitCodes.LOST;
    } finally {
      poller.interrupt();
      poller.join(Duration.ofSeconds(5));
    }
    JsonNode run = awaitEnd();
    printNewDecisions(run);
    return ExitCodes.of(run, runId, err, terminal);
  }

  /** Asks the server to kill the run once; later calls only report. */
  void kill(String why) {
    if (!killAsked.compareAndSet(false, true)) {
      return;
    }
    synchronized (err) {
      err.println(terminal.yellow("agent-sandbox: " + why + ": killing run " + runId));
      err.flush();
    }
    try {
      api.call(
          "kill run " + runId,
          api.request(AdminApi.RUNS + "/" + runId, Duration.ofSeconds(30)).DELETE().build());
    } catch (ApiCallException e) {
      if (!e.code().equals("run_ended")) {
        report(e.getMessage());
      }
    } catch (IOException e) {
      report("kill run " + runId + ": " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Ctrl-C kills the run (once); a second Ctrl-C leaves without waiting for the end. Returns
   * whether the handler could be installed (not when the shell started us with SIGINT ignored).
   */
  boolean killOnInterrupt() {
    try {
      Signal.handle(
          new Signal("INT"),
          signal -> {
            if (killAsked.get()) {
              report(
                  "stopped waiting; run "
                      + runId
                      + " is being killed (agent-sandbox runs get "
                      + runId
                      + ")");
              Runtime.getRuntime().halt(ExitCodes.KILLED);
            }
            Thread.ofVirtual().start(() -> kill("Ctrl-C"));
          });
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  private void pollDecisions() {
    try {
      while (!Thread.currentThread().isInterrupted()) {
        JsonNode run = api.get("read run " + runId, AdminApi.RUNS + "/" + runId);
        announce(run);
        printNewDecisions(run);
        if (ENDED.contains(run.path("status").asText())) {
          return;
        }
        Thread.sleep(POLL);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (IOException | RuntimeException e) {
      // The output stream reports a lost server; the end is read again after it.
    }
  }

  private void announce(JsonNode run) {
    if (terminal.interactive()
        && run.path("status").asText().equals("pending")
        && Duration.between(followedSince, Instant.now()).compareTo(PENDING_NOTICE) >= 0
        && announcedPending.compareAndSet(false, true)) {
      report(
          terminal.dim(
              "run "
                  + runId
                  + " pending: "
                  + run.path("backend").asText("the backend")
                  + " is still creating its sandbox (networks, proxy, workload)..."));
    }
    if (terminal.interactive()
        && run.path("status").asText().equals("running")
        && announcedStart.compareAndSet(false, true)) {
      report(
          terminal.dim(
              "run "
                  + runId
                  + " running on "
                  + run.path("backend").asText()
                  + " ("
                  + run.path("runtime").asText()
                  + ")"));
    }
  }

  private synchronized void printNewDecisions(JsonNode run) {
    JsonNode egress = run.path("egress");
    for (int i = decisionsSeen; i < egress.size(); i++) {
      JsonNode decision = egress.get(i);
      if (decision.path("decision").asText().equals("deny")) {
        String line =
            terminal.red("denied:")
                + " "
                + TerminalText.line(
                    decision.path("host").asText("?")
                        + ":"
                        + decision.path("port").asText("?")
                        + " "
                        + decision.path("reason").asText("?"));
        synchronized (err) {
          err.println(line);
          err.flush();
        }
      }
    }
    decisionsSeen = Math.max(decisionsSeen, egress.size());
  }

  private JsonNode awaitEnd() throws IOException, InterruptedException {
    Instant until = Instant.now().plus(END_WAIT);
    while (true) {
      JsonNode run = api.get("read run " + runId, AdminApi.RUNS + "/" + runId);
      if (ENDED.contains(run.path("status").asText()) || Instant.now().isAfter(until)) {
        return run;
      }
      Thread.sleep(200);
    }
  }

  /**
   * Copies a run's output stream as it arrives: with each line tagged ({@code
   * application/x-ndjson}), the workload's standard output to {@code out} and its standard error to
   * {@code err}; a plain-text answer (a server that does not tag) all to {@code out}. What goes to
   * a terminal is escaped ({@link TerminalText.Escaper}: no escape sequence a workload prints acts
   * on the operator's terminal); what goes to a pipe or a file is written as the workload wrote it.
   * Both writers are locked while written, since refusals are printed on {@code err} from another
   * thread.
   */
  static void copyOutput(
      HttpResponse<InputStream> response, PrintWriter out, PrintWriter err, Terminal terminal)
      throws IOException {
    Shown toOut = new Shown(out, terminal.stdoutTerminal());
    Shown toErr = new Shown(err, terminal.stderrTerminal());
    try {
      copy(response, toOut, toErr);
    } finally {
      toOut.finish();
      toErr.finish();
    }
  }

  /** One writer, and its escaper when it is a terminal. */
  private static final class Shown {
    final PrintWriter writer;
    final TerminalText.Escaper escaper;

    Shown(PrintWriter writer, boolean terminal) {
      this.writer = writer;
      this.escaper = terminal ? new TerminalText.Escaper() : null;
    }

    void print(CharSequence text) {
      synchronized (writer) {
        writer.print(escaper == null ? text.toString() : escaper.feed(text));
        writer.flush();
      }
    }

    void finish() {
      if (escaper != null) {
        synchronized (writer) {
          writer.print(escaper.finish());
          writer.flush();
        }
      }
    }
  }

  private static void copy(HttpResponse<InputStream> response, Shown out, Shown err)
      throws IOException {
    String type = response.headers().firstValue("Content-Type").orElse("");
    try (InputStream stream = response.body();
        Reader reader = new InputStreamReader(stream, StandardCharsets.UTF_8)) {
      if (!type.startsWith("application/x-ndjson")) {
        char[] buffer = new char[8192];
        int read;
        while ((read = reader.read(buffer)) >= 0) {
          out.print(java.nio.CharBuffer.wrap(buffer, 0, read));
        }
        return;
      }
      BufferedReader lines = new BufferedReader(reader);
      String line;
      while ((line = lines.readLine()) != null) {
        if (line.isBlank()) {
          continue;
        }
        JsonNode tagged = JSON.readTree(line);
        Shown to = tagged.has("stderr") ? err : out;
        String text =
            tagged.has("skipped_lines")
                ? "[agent-sandbox: "
                    + tagged.path("skipped_lines").asLong()
                    + " lines left the retained tail unread]\n"
                : tagged.path(tagged.has("stderr") ? "stderr" : "stdout").asText("");
        to.print(text);
      }
    }
  }

  private void report(String message) {
    synchronized (err) {
      err.println("agent-sandbox: " + message);
      err.flush();
    }
  }
}
