package dev.agentsandbox.server;

/** The server could not start (typically: the address could not be bound). */
public final class UnableToStartServerException extends ServerException {
  private static final long serialVersionUID = 1L;

  public UnableToStartServerException(String message, Throwable cause) {
    super(message, cause);
  }
}
