package dev.agentsandbox.backend;

/** A sandbox could not be created; whatever was created before the failure has been removed. */
public class UnableToLaunchSandboxException extends SandboxException {
  private static final long serialVersionUID = 1L;

  public UnableToLaunchSandboxException(String message) {
    super(message);
  }

  public UnableToLaunchSandboxException(String message, Throwable cause) {
    super(message, cause);
  }
}
