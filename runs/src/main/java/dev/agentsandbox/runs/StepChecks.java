package dev.agentsandbox.runs;

import dev.agentsandbox.backend.session.InvalidWorkspacePathException;
import dev.agentsandbox.backend.session.WorkspacePath;
import dev.agentsandbox.policy.run.EnvScreen;
import dev.agentsandbox.runs.session.ExecRequest;
import dev.agentsandbox.runs.session.SessionError;
import dev.agentsandbox.runs.session.SessionRefusedException;
import java.util.List;

/**
 * Every rule a step is checked by before it gets a number: its command's shape (as a run's), its
 * time-out's range, its environment's screen, its stdin against the agent's cap, its folder as
 * written. Pure.
 */
final class StepChecks {
  private StepChecks() {}

  /** What a step is refused for before it gets a number. */
  static WorkspacePath check(LiveRun run, LiveSession session, ExecRequest request) {
    String starting = "start a step in session " + run.runId() + ": ";
    List<String> problems = new java.util.ArrayList<>();
    if (request.command().isEmpty()) {
      problems.add("command: at least one argument is required");
    }
    if (request.command().size() > RunRequest.MAX_ARGUMENTS) {
      problems.add("command: at most " + RunRequest.MAX_ARGUMENTS + " arguments");
    }
    for (int i = 0; i < request.command().size(); i++) {
      String arg = request.command().get(i);
      if (arg.length() > RunRequest.MAX_ARGUMENT_LENGTH) {
        problems.add("command[" + i + "]: longer than " + RunRequest.MAX_ARGUMENT_LENGTH);
      }
      if (arg.indexOf('\0') >= 0) {
        problems.add("command[" + i + "]: holds a NUL character");
      }
    }
    if (request.timeoutSeconds() < 1
        || request.timeoutSeconds() > ExecRequest.MAX_TIMEOUT_SECONDS) {
      problems.add(
          "timeout_seconds: must be from 1 to "
              + ExecRequest.MAX_TIMEOUT_SECONDS
              + ", not "
              + request.timeoutSeconds());
    }
    if (!problems.isEmpty()) {
      throw new SessionRefusedException(
          SessionError.INVALID_REQUEST, starting + String.join("; ", problems));
    }
    List<String> envProblems = EnvScreen.problems(request.env());
    if (!envProblems.isEmpty()) {
      throw new RunRefusedException(
          Refusal.ENV_REFUSED, starting + "the step's environment is refused", envProblems);
    }
    if (request.stdinBytes() > session.limits.maxStdinBytes()) {
      throw new SessionRefusedException(
          SessionError.STDIN_TOO_LARGE,
          starting
              + "stdin is "
              + request.stdinBytes()
              + " bytes, over the agent's sessions.max_stdin_bytes of "
              + session.limits.maxStdinBytes()
              + " (put large input in as a file)");
    }
    try {
      return WorkspacePath.parse(request.cwd());
    } catch (InvalidWorkspacePathException e) {
      throw new SessionRefusedException(
          SessionError.INVALID_PATH, starting + "cwd: " + e.getMessage());
    }
  }
}
