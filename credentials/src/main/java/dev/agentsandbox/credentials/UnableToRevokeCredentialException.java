package dev.agentsandbox.credentials;

/**
 * A credential could not be revoked; it works until its expiry. The message names the credential
 * and what went wrong, never its value nor anything the revoking command printed.
 */
public final class UnableToRevokeCredentialException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public UnableToRevokeCredentialException(String message) {
    super(message);
  }

  public UnableToRevokeCredentialException(String message, Throwable cause) {
    super(message, cause);
  }
}
