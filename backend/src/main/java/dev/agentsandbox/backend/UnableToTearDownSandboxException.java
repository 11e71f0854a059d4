package dev.agentsandbox.backend;

/**
 * Some of a sandbox's resources (containers, networks, a namespace, a Job) could not be deleted;
 * they keep their labels, so the reaper tries again.
 */
public class UnableToTearDownSandboxException extends SandboxException {
  private static final long serialVersionUID = 1L;

  public UnableToTearDownSandboxException(String message) {
    super(message);
  }

  public UnableToTearDownSandboxException(String message, Throwable cause) {
    super(message, cause);
  }
}
