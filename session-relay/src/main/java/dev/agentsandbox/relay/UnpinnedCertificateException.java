package dev.agentsandbox.relay;

import java.security.cert.CertificateException;

/** A peer presented something other than exactly the one certificate pinned for the session. */
public final class UnpinnedCertificateException extends CertificateException {
  private static final long serialVersionUID = 1L;

  UnpinnedCertificateException(String message) {
    super(message);
  }
}
