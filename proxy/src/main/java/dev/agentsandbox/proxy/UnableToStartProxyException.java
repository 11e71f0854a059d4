package dev.agentsandbox.proxy;

/** The proxy could not start listening (port taken, address not local, metrics port taken). */
public final class UnableToStartProxyException extends ProxyException {
  private static final long serialVersionUID = 1L;

  public UnableToStartProxyException(String message, Throwable cause) {
    super(message, cause);
  }
}
