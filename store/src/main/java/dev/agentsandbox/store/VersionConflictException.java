package dev.agentsandbox.store;

/** A configuration was saved against a version that is no longer the current one. */
public final class VersionConflictException extends StoreException {
  private static final long serialVersionUID = 1L;

  private final String key;
  private final long expected;
  private final long actual;

  public VersionConflictException(String key, long expected, long actual) {
    super(
        "save configuration "
            + key
            + ": version "
            + expected
            + " was expected but the current version is "
            + actual
            + " (read the configuration again, reapply the change and retry)");
    this.key = key;
    this.expected = expected;
    this.actual = actual;
  }

  public String key() {
    return key;
  }

  public long expected() {
    return expected;
  }

  public long actual() {
    return actual;
  }
}
