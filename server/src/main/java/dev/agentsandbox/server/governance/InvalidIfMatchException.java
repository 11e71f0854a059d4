package dev.agentsandbox.server.governance;

/** The {@code If-Match} header is not an ETag from GET, or disagrees with the body's version. */
public final class InvalidIfMatchException extends GovernanceException {
  private static final long serialVersionUID = 1L;

  public InvalidIfMatchException(String message) {
    super(message);
  }
}
