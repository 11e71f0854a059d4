package dev.agentsandbox.artifacts;

/** The root of every failure to collect, keep or read a run's artifacts. */
public class ArtifactException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public ArtifactException(String message) {
    super(message);
  }

  public ArtifactException(String message, Throwable cause) {
    super(message, cause);
  }
}
