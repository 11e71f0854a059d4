package dev.agentsandbox.server;

/** The root of the server module's unchecked exceptions. */
public class ServerException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public ServerException(String message) {
    super(message);
  }

  public ServerException(String message, Throwable cause) {
    super(message, cause);
  }
}
