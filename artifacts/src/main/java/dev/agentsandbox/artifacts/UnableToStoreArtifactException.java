package dev.agentsandbox.artifacts;

/** The artifact store failed (a disk, or an S3 endpoint); the message names the store and step. */
public final class UnableToStoreArtifactException extends ArtifactException {
  private static final long serialVersionUID = 1L;

  public UnableToStoreArtifactException(String message, Throwable cause) {
    super(message, cause);
  }

  /**
   * The one message shape of a store's failures: {@code <action> of run <id> in <store>: <what
   * happened>}.
   */
  static UnableToStoreArtifactException of(
      String action, String runId, ArtifactStore store, String happened, Throwable cause) {
    return new UnableToStoreArtifactException(
        action + " of run " + runId + " in " + store.describe() + ": " + happened, cause);
  }
}
