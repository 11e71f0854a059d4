package dev.agentsandbox.store;

/** Opening or migrating the database failed; the message never contains the password. */
public final class UnableToOpenStoreException extends StoreException {
  private static final long serialVersionUID = 1L;

  public UnableToOpenStoreException(String message) {
    super(message);
  }

  public UnableToOpenStoreException(String message, Throwable cause) {
    super(message, cause);
  }
}
