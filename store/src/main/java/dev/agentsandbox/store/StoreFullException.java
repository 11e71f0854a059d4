package dev.agentsandbox.store;

/**
 * A write was refused because the store's disk (SQLite's data directory, or PostgreSQL's) is full.
 * The transaction was rolled back: nothing of it was written.
 */
public final class StoreFullException extends StoreException {
  private static final long serialVersionUID = 1L;

  public StoreFullException(String message, Throwable cause) {
    super(message, cause);
  }
}
