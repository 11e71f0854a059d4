package dev.agentsandbox.store;

/** A statement against an open store failed (connection lost, disk full, constraint broken). */
public final class UnableToAccessStoreException extends StoreException {
  private static final long serialVersionUID = 1L;

  public UnableToAccessStoreException(String message, Throwable cause) {
    super(message, cause);
  }
}
