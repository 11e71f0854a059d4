package dev.agentsandbox.relay;

/** Why the session's one connection ended. A closed set, as the relay's log names it. */
public enum RelayEnd {
  /** The control plane closed its end. */
  CLIENT_CLOSED("client-closed"),
  /** The step runner closed its end (it exited). */
  RUNNER_CLOSED("runner-closed"),
  /**
   * A record from the control plane's side failed its authentication (changed, replayed, dropped or
   * reordered on the way): nothing of it reached the runner, and the connection is cut.
   */
  RECORD_REFUSED("record-refused"),
  /** A read or write failed (a reset, a broken pipe). */
  IO_ERROR("io-error");

  private final String wireName;

  RelayEnd(String wireName) {
    this.wireName = wireName;
  }

  /** The name the relay's log uses. */
  public String wireName() {
    return wireName;
  }
}
