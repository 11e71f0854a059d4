package dev.agentsandbox.steprunner;

/**
 * The runner sent something the protocol does not allow (a frame too large, of an unknown type, for
 * a channel that is not open, a size it then exceeded, a name that is not a path). The session
 * cannot be trusted any further and ends as failed. The message never quotes the guest's bytes
 * beyond a bounded, printable prefix.
 */
final class ProtocolViolationException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  ProtocolViolationException(String message) {
    super(message);
  }
}
