package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.PrintWriter;

/**
 * The exit codes of {@code run}: the workload's own status when it exited, otherwise one of a block
 * just under 128 (where the shell's 126 and 127 and the signals' 128+N are not), each announced on
 * stderr so that a workload exiting with the same number is told apart, as {@code docker run} does
 * with 125 to 127.
 */
final class ExitCodes {
  /** The run ended, but {@code --artifacts} could not save all of its artifacts. */
  static final int ARTIFACTS_NOT_SAVED = 120;

  /** The command line could not follow the run to its end (the server went away). */
  static final int LOST = 121;

  /** The run failed in the backend (a container, network or pod could not be made or watched). */
  static final int BACKEND_FAILURE = 122;

  /** The run was killed: Ctrl-C, {@code runs kill}, or the server shutting down. */
  static final int KILLED = 123;

  /** The run reached its agent's {@code ttl_seconds} and was killed there. */
  static final int TIMED_OUT = 124;

  /** The run was refused before anything started (or the server could not be reached). */
  static final int REFUSED = 125;

  private ExitCodes() {}

  /**
   * The exit code for a session's ended step, as {@code docker exec} gives the command's: its own
   * status when it exited, otherwise one of the block above, said on stderr.
   */
  static int ofStep(JsonNode step, String runId, PrintWriter err, Terminal terminal) {
    String end = step.path("end").asText();
    int code =
        switch (end) {
          case "exit" ->
              step.path("exit_status").isInt() ? step.path("exit_status").asInt() & 0xff : LOST;
          case "timeout" -> TIMED_OUT;
          case "killed" -> KILLED;
          case "session_ended", "error" -> BACKEND_FAILURE;
          default -> LOST;
        };
    String why =
        switch (end) {
          case "exit" -> null;
          case "timeout" -> "timed out (its timeout_seconds) and was killed";
          case "killed" -> "was killed";
          case "session_ended" -> "ended with its session (closed, idle, deadline or failed)";
          case "error" -> "was lost by the backend: " + step.path("detail").asText("no detail");
          default -> "had not ended";
        };
    if (why != null) {
      err.println(
          terminal.yellow(
              "agent-sandbox: step "
                  + step.path("step").asText("?")
                  + " of session "
                  + runId
                  + " "
                  + why
                  + " (exit code "
                  + code
                  + ")"));
      err.flush();
    }
    return code;
  }

  /** The exit code for an ended run, saying on stderr why when it is not the workload's. */
  static int of(JsonNode run, String runId, PrintWriter err, Terminal terminal) {
    String status = run.path("status").asText();
    int code =
        switch (status) {
          case "exited" ->
              run.path("exit_status").isInt()
                  ? run.path("exit_status").asInt() & 0xff
                  : BACKEND_FAILURE;
          case "deadline" -> TIMED_OUT;
          case "killed" -> KILLED;
          case "failed" -> BACKEND_FAILURE;
          // A session closed or idled out: each of its steps had its own exit status.
          case "closed" -> 0;
          default -> LOST;
        };
    String why =
        switch (status) {
          case "exited" -> code == BACKEND_FAILURE ? "exited without an exit status" : null;
          case "deadline" -> "timed out (the agent's ttl_seconds) and was killed";
          case "killed" -> "was killed";
          case "failed" -> "failed: " + run.path("detail").asText("the backend gave no detail");
          case "closed" -> null;
          default -> "had not ended after waiting (status " + status + ")";
        };
    if (why != null) {
      err.println(
          terminal.yellow("agent-sandbox: run " + runId + " " + why + " (exit code " + code + ")"));
      err.flush();
    }
    return code;
  }
}
