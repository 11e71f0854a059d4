package dev.agentsandbox.relay;

/**
 * Why the relay closed a connection without relaying a byte of it. A closed set: the relay's log
 * names one of these, never anything the peer sent.
 */
public enum RelayRefusal {
  /** The first bytes were not a TLS handshake record (plain frames, HTTP, a port scan). */
  NOT_TLS("not-tls"),
  /** The peer offered no TLS 1.3 (an older version, or nothing this end speaks). */
  PROTOCOL_VERSION("protocol-version"),
  /** The peer presented no client certificate. */
  NO_CLIENT_CERTIFICATE("no-client-certificate"),
  /** The peer's certificate is not the one pinned for this session (another key, a CA's). */
  CERTIFICATE_NOT_PINNED("certificate-not-pinned"),
  /** The handshake did not finish within its time. */
  HANDSHAKE_TIMEOUT("handshake-timeout"),
  /** The handshake failed otherwise (a bad signature or Finished, a record that fails its MAC). */
  HANDSHAKE_FAILED("handshake-failed"),
  /** Too many handshakes at once. */
  BUSY("busy"),
  /** The session's one connection was already taken: the relay serves one, once. */
  SESSION_TAKEN("session-taken");

  private final String wireName;

  RelayRefusal(String wireName) {
    this.wireName = wireName;
  }

  /** The name the relay's log uses. */
  public String wireName() {
    return wireName;
  }
}
