package dev.agentsandbox.backend;

import java.util.List;

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

  /**
   * Throws when removing a run's resources left problems, naming each; what is left keeps its
   * labels, so the reaper retries when the run's expiry passes.
   *
   * @param removing what was being removed, such as {@code "removing the sandbox of run r1"}
   * @param problems one entry per resource that could not be removed; none means nothing is thrown
   */
  public static void throwIfAny(String removing, List<String> problems) {
    if (!problems.isEmpty()) {
      throw new UnableToTearDownSandboxException(
          removing
              + ": "
              + String.join("; ", problems)
              + " (the reaper retries when the run's expiry passes)");
    }
  }
}
