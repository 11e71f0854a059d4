package dev.agentsandbox.server.governance;

import dev.agentsandbox.server.ServerException;

/**
 * A change to a governed document was refused before anything was saved. Sealed so that the mapping
 * to HTTP ({@code ErrorMapper}) must name every kind.
 */
public abstract sealed class GovernanceException extends ServerException
    permits InvalidChangeException,
        InvalidIfMatchException,
        VersionRequiredException,
        StaleVersionException,
        WeakeningRefusedException {
  private static final long serialVersionUID = 1L;

  GovernanceException(String message) {
    super(message);
  }
}
