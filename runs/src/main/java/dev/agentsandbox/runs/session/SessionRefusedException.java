package dev.agentsandbox.runs.session;

import java.util.Objects;
import java.util.Optional;

/**
 * An operation on a session was refused; its {@link #error()} says why as a closed value. The
 * message says what was tried, on what, what happened and what to do; it never quotes a file's
 * content or an env value, and quotes at most a bounded prefix of what the client sent.
 */
public class SessionRefusedException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final SessionError error;
  private final String reason;
  private final String runId;

  public SessionRefusedException(SessionError error, String message) {
    this(error, message, null, null);
  }

  /**
   * @param reason the finer reason, for {@link SessionError#PATH_REFUSED} and {@link
   *     SessionError#INVALID_ARCHIVE} (a wire name such as {@code symlink}); may be null
   * @param runId the run the refusal is about, for {@link SessionError#SESSION_FAILED}; may be null
   */
  public SessionRefusedException(SessionError error, String message, String reason, String runId) {
    super(message);
    this.error = Objects.requireNonNull(error, "error");
    this.reason = reason;
    this.runId = runId;
  }

  public SessionError error() {
    return error;
  }

  /** The finer reason, where the error has one. */
  public Optional<String> reason() {
    return Optional.ofNullable(reason);
  }

  /** The run, where the answer names it (a session that failed to come up). */
  public Optional<String> runId() {
    return Optional.ofNullable(runId);
  }
}
