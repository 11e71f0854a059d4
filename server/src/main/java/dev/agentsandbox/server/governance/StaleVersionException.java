package dev.agentsandbox.server.governance;

/**
 * A change was made to a version that is no longer the current one, found before saving. (The
 * store's {@code VersionConflictException} is the same conflict found while saving, when another
 * change commits in between.)
 */
public final class StaleVersionException extends GovernanceException {
  private static final long serialVersionUID = 1L;

  private final long sent;
  private final long current;

  public StaleVersionException(String key, long sent, long current) {
    super(
        "update "
            + key
            + ": you sent version "
            + sent
            + " but the current one is "
            + current
            + " (GET it again, re-apply your change and send the new version)");
    this.sent = sent;
    this.current = current;
  }

  public long sent() {
    return sent;
  }

  public long current() {
    return current;
  }
}
