package dev.agentsandbox.store;

/** A token was created under a name that an active (unrevoked, unexpired) token already has. */
public final class TokenNameTakenException extends StoreException {
  private static final long serialVersionUID = 1L;

  private final String name;

  public TokenNameTakenException(String name) {
    super(
        "create token "
            + name
            + ": an active token already has this name (revoke it first or choose another name)");
    this.name = name;
  }

  public String name() {
    return name;
  }
}
