package dev.agentsandbox.artifacts;

/** The artifact store failed (a disk, or an S3 endpoint); the message names the store and step. */
public final class UnableToStoreArtifactException extends ArtifactException {
  private static final long serialVersionUID = 1L;

  public UnableToStoreArtifactException(String message, Throwable cause) {
    super(message, cause);
  }
}
