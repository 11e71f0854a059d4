package dev.agentsandbox.server.governance;

/** A saved document was changed without saying which version the change was made to. */
public final class VersionRequiredException extends GovernanceException {
  private static final long serialVersionUID = 1L;

  private final long current;

  public VersionRequiredException(String key, long current) {
    super(
        "update "
            + key
            + ": send the version you read (If-Match: \""
            + current
            + "\" or a \"version\" field) so that no one's change is silently overwritten");
    this.current = current;
  }

  /** The version the caller should have sent, had it read the document just now. */
  public long current() {
    return current;
  }
}
