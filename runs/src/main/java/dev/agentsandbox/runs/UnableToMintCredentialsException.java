package dev.agentsandbox.runs;

import dev.agentsandbox.policy.event.Revocation;
import java.util.List;

/**
 * A run's credentials could not all be minted; those minted before the failure were revoked as far
 * as they can be, and {@link #revocations()} says what became of each. The message names the
 * credential that failed, never a value.
 */
public final class UnableToMintCredentialsException extends RunException {
  private static final long serialVersionUID = 1L;

  private final transient List<Revocation> revocations;

  UnableToMintCredentialsException(
      String message, List<Revocation> revocations, RuntimeException cause) {
    super(message, cause);
    this.revocations = List.copyOf(revocations);
  }

  /** What became of each credential minted before the failure. */
  public List<Revocation> revocations() {
    return revocations;
  }
}
