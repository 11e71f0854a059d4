package dev.agentsandbox.runs.session;

/**
 * How a client takes a folder from a session ({@code Accept}); a regular file always comes whole.
 */
public enum FileForm {
  /** Only a regular file: a folder is refused as {@link SessionError#NOT_ACCEPTABLE}. */
  FILE,
  /** A folder as a tar of its regular files and folders. */
  TAR,
  /** A folder's listing. */
  LISTING
}
