package dev.agentsandbox.backend;

/** The root of every failure a backend reports. Messages never carry secrets or env values. */
public class SandboxException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public SandboxException(String message) {
    super(message);
  }

  public SandboxException(String message, Throwable cause) {
    super(message, cause);
  }
}
