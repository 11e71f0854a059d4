package dev.agentsandbox.policy.net;

/**
 * The verdict on a request target before any lookup (steps 1 to 5 of the proxy's rules).
 *
 * @param reason {@link Reason#ALLOWED} or why the target was refused
 * @param host the canonical host when the target parsed, else a bounded echo of what was sent
 * @param port the requested port, or 0 when it did not parse
 * @param detail a short human explanation for the refusal body (empty when allowed)
 */
public record Decision(Reason reason, String host, int port, String detail) {
  public Decision {
    if (reason == null || host == null || detail == null) {
      throw new IllegalArgumentException("reason, host and detail are required");
    }
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException("port out of range: " + port);
    }
  }

  /** Whether the target may be resolved and dialled. */
  public boolean allowed() {
    return reason == Reason.ALLOWED;
  }
}
