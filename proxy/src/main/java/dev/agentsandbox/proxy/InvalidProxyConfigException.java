package dev.agentsandbox.proxy;

/** The proxy's command line or policy file is not valid; the message is one actionable line. */
public final class InvalidProxyConfigException extends ProxyException {
  private static final long serialVersionUID = 1L;

  public InvalidProxyConfigException(String message) {
    super(message);
  }

  public InvalidProxyConfigException(String message, Throwable cause) {
    super(message, cause);
  }
}
