package dev.agentsandbox.runs;

/** The root of the run service's failures. Messages never carry env values or tokens. */
public class RunException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public RunException(String message) {
    super(message);
  }

  public RunException(String message, Throwable cause) {
    super(message, cause);
  }
}
