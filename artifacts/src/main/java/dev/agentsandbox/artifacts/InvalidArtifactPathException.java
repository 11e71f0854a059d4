package dev.agentsandbox.artifacts;

/** A name that {@link ArtifactPath} refuses; the message never repeats a long name whole. */
public final class InvalidArtifactPathException extends ArtifactException {
  private static final long serialVersionUID = 1L;

  public InvalidArtifactPathException(String path, String problem) {
    super("invalid artifact path " + shorten(path) + ": " + problem);
  }

  static String shorten(String path) {
    if (path == null) {
      return "(none)";
    }
    String printable = path.replaceAll("\\p{Cntrl}", "?");
    return "'" + (printable.length() > 80 ? printable.substring(0, 77) + "..." : printable) + "'";
  }
}
