package dev.agentsandbox.runs.session;

/**
 * Why an operation on a session was refused: a closed set, each with the stable code the API's
 * {@code error} field and the {@code agent_sandbox.files} row carry. The HTTP status of each is
 * decided in one place, the server's {@code ErrorMapper}.
 */
public enum SessionError {
  /** {@code exec}, {@code steps} or {@code files} on a one-shot run. */
  NOT_A_SESSION("not_a_session"),
  /** The session has ended (or is ending): it takes no step and no file operation. */
  RUN_ENDED("run_ended"),
  /** The session already runs its maximum of steps at once. */
  TOO_MANY_STEPS("too_many_steps"),
  /** No step of the session has that number. */
  STEP_NOT_FOUND("step_not_found"),
  /** A kill of a step that already ended. */
  STEP_ENDED("step_ended"),
  /** The request itself is malformed (a command's shape, a time-out out of range, ...). */
  INVALID_REQUEST("invalid_request"),
  /** A path or cwd that is not a path inside {@code /workspace} as written. */
  INVALID_PATH("invalid_path"),
  /** A path refused as found inside the sandbox (a link, a special file, the wrong kind). */
  PATH_REFUSED("path_refused"),
  /** Nothing is at the path. */
  FILE_NOT_FOUND("file_not_found"),
  /** A file, folder or upload over the agent's {@code sessions.max_file_bytes}. */
  FILE_TOO_LARGE("file_too_large"),
  /** A step's stdin over the agent's {@code sessions.max_stdin_bytes}. */
  STDIN_TOO_LARGE("stdin_too_large"),
  /** A tar put into a session with an entry the rules refuse. */
  INVALID_ARCHIVE("invalid_archive"),
  /** A folder asked for without saying whether as a tar or as a listing. */
  NOT_ACCEPTABLE("not_acceptable"),
  /** The session's sandbox did not come up; the run is recorded failed. */
  SESSION_FAILED("session_failed"),
  /**
   * The backend could not start the step or carry the file operation (its daemon, guest or runner
   * did not answer); the session may still be usable.
   */
  STEP_FAILED("step_failed");

  private final String code;

  SessionError(String code) {
    this.code = code;
  }

  /** The stable wire code. */
  public String code() {
    return code;
  }
}
