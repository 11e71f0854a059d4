package dev.agentsandbox.artifacts;

import dev.agentsandbox.policy.text.Bounded;

/** A name that {@link ArtifactPath} refuses; the message never repeats a long name whole. */
public final class InvalidArtifactPathException extends ArtifactException {
  private static final long serialVersionUID = 1L;

  public InvalidArtifactPathException(String path, String problem) {
    super("invalid artifact path " + shorten(path) + ": " + problem);
  }

  /**
   * The name as a message shows it: cut to 80 characters, each character a name may not contain
   * written as {@code <U+XXXX>}, never itself (it would forge the log line or reorder it).
   */
  static String shorten(String path) {
    if (path == null) {
      return "(none)";
    }
    return "'" + Bounded.within(path, 80, Bounded.Escape.NAME) + "'";
  }
}
