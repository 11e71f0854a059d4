package dev.agentsandbox.backend.session;

import dev.agentsandbox.backend.SandboxException;

/**
 * A step could not be started, or a file operation failed for a reason of the backend's (the
 * daemon, the guest or the runner did not answer): the message names the step and the cause. The
 * session itself may still be usable.
 */
public class UnableToRunStepException extends SandboxException {
  private static final long serialVersionUID = 1L;

  public UnableToRunStepException(String message) {
    super(message);
  }

  public UnableToRunStepException(String message, Throwable cause) {
    super(message, cause);
  }
}
