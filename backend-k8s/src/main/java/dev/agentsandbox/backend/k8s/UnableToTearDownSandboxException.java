package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.backend.SandboxException;

/** Deleting a sandbox's namespace or Job failed; the reaper will try again from the labels. */
public class UnableToTearDownSandboxException extends SandboxException {
  private static final long serialVersionUID = 1L;

  public UnableToTearDownSandboxException(String message, Throwable cause) {
    super(message, cause);
  }
}
