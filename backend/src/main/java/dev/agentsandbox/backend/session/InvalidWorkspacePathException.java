package dev.agentsandbox.backend.session;

/**
 * A path a client gave is not a path inside the workspace ({@link WorkspacePath#parse}); nothing
 * was looked up. The message quotes a bounded, printable prefix of the path.
 */
public class InvalidWorkspacePathException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  public InvalidWorkspacePathException(String path, String problem) {
    super("path " + path + " " + problem);
  }
}
