package dev.agentsandbox.artifacts;

/** A run has no artifact of the name asked for. */
public final class ArtifactNotFoundException extends ArtifactException {
  private static final long serialVersionUID = 1L;

  public ArtifactNotFoundException(String runId, String path) {
    super(
        "read artifact "
            + InvalidArtifactPathException.shorten(path)
            + " of run "
            + runId
            + ": no such artifact (list the run's artifacts for their names)");
  }
}
