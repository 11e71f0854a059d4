package dev.agentsandbox.runs;

import dev.agentsandbox.backend.session.InvalidWorkspacePathException;
import dev.agentsandbox.backend.session.PathRefusedException;
import dev.agentsandbox.backend.session.UnableToRunStepException;
import dev.agentsandbox.backend.session.WorkspacePath;
import dev.agentsandbox.runs.session.SessionError;
import dev.agentsandbox.runs.session.SessionRefusedException;
import java.io.IOException;

/**
 * How a session's file operation is refused, each as a {@link SessionRefusedException} saying what
 * was tried on what, what happened and what to do, never quoting a file's content: a path as
 * written, a path as the backend found it, a size over the agent's cap, the backend failing, a body
 * that could not be read.
 */
final class SessionFileRefusals {
  private SessionFileRefusals() {}

  static WorkspacePath path(LiveRun run, String op, String text) {
    if (text == null) {
      throw new SessionRefusedException(
          SessionError.INVALID_PATH,
          op + " a file of session " + run.runId() + ": the path query parameter is required");
    }
    try {
      return WorkspacePath.parse(text);
    } catch (InvalidWorkspacePathException e) {
      throw new SessionRefusedException(
          SessionError.INVALID_PATH,
          op + " a file of session " + run.runId() + ": " + e.getMessage());
    }
  }

  static SessionRefusedException refused(
      LiveRun run, String op, WorkspacePath path, PathRefusedException e, long cap) {
    String doing = op + " " + path.absolute() + " of session " + run.runId() + ": ";
    return switch (e.reason()) {
      case NOT_FOUND ->
          new SessionRefusedException(SessionError.FILE_NOT_FOUND, doing + "nothing is there");
      case TOO_LARGE ->
          new SessionRefusedException(
              SessionError.FILE_TOO_LARGE,
              doing
                  + "over the agent's sessions.max_file_bytes of "
                  + cap
                  + " (nothing was written or sent)",
              e.reason().wireName(),
              null);
      default ->
          new SessionRefusedException(
              SessionError.PATH_REFUSED, doing + e.getMessage(), e.reason().wireName(), null);
    };
  }

  static SessionRefusedException tooLarge(
      LiveRun run, String op, String path, String size, long cap) {
    return new SessionRefusedException(
        SessionError.FILE_TOO_LARGE,
        op
            + " "
            + path
            + " of session "
            + run.runId()
            + ": "
            + size
            + ", over the agent's sessions.max_file_bytes of "
            + cap
            + " (nothing was written or sent)",
        PathRefusedException.Reason.TOO_LARGE.wireName(),
        null);
  }

  static SessionRefusedException failed(
      LiveRun run, String op, WorkspacePath path, UnableToRunStepException e) {
    return new SessionRefusedException(
        SessionError.STEP_FAILED,
        op
            + " "
            + path.absolute()
            + " of session "
            + run.runId()
            + ": the backend could not carry it ("
            + RunLifecycle.bounded(e.getMessage())
            + "); the session may still be usable");
  }

  static SessionRefusedException bodyFailed(LiveRun run, WorkspacePath path, IOException e) {
    return new SessionRefusedException(
        SessionError.INVALID_REQUEST,
        "put "
            + path.absolute()
            + " of session "
            + run.runId()
            + ": the request body could not be read whole ("
            + e.getClass().getSimpleName()
            + "; nothing was written)");
  }
}
