package dev.agentsandbox.credentials;

/**
 * A credential could not be minted for a run; the run is then refused before anything is created.
 * The message names the credential, its source and what went wrong, never a credential value.
 */
public final class UnableToIssueCredentialException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public UnableToIssueCredentialException(String message) {
    super(message);
  }

  public UnableToIssueCredentialException(String message, Throwable cause) {
    super(message, cause);
  }
}
