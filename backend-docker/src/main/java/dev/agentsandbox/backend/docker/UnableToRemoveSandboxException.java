package dev.agentsandbox.backend.docker;

import dev.agentsandbox.backend.SandboxException;

/** Some of a run's containers or networks could not be removed; the reaper will retry. */
public class UnableToRemoveSandboxException extends SandboxException {
  private static final long serialVersionUID = 1L;

  public UnableToRemoveSandboxException(String message) {
    super(message);
  }
}
