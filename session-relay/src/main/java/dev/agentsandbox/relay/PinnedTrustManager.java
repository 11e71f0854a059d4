package dev.agentsandbox.relay;

import java.net.Socket;
import java.security.cert.CertificateExpiredException;
import java.security.cert.CertificateNotYetValidException;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.util.Date;
import java.util.Objects;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * Trusts exactly one certificate, by its pin, and nothing else: a chain of one certificate whose
 * SHA-256 is the pin, within its validity. No CA, no name, no path building: a chain that holds the
 * pinned certificate beside others, or a certificate signed by anyone for the same subject, is
 * refused. An {@link X509ExtendedTrustManager}, so the JDK adds no checks of its own around it (and
 * none is needed: the pin is the identity). Thread-safe.
 */
final class PinnedTrustManager extends X509ExtendedTrustManager {
  private final CertificatePin pin;
  private final Clock clock;

  PinnedTrustManager(CertificatePin pin, Clock clock) {
    this.pin = Objects.requireNonNull(pin, "pin");
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  void check(X509Certificate[] chain) throws UnpinnedCertificateException {
    if (chain == null || chain.length == 0) {
      throw new UnpinnedCertificateException("the peer presented no certificate");
    }
    if (chain.length != 1) {
      throw new UnpinnedCertificateException(
          "the peer presented "
              + chain.length
              + " certificates (a session's peer presents exactly its own one)");
    }
    if (!pin.matches(chain[0])) {
      throw new UnpinnedCertificateException(
          "the peer's certificate " + CertificatePin.of(chain[0]) + " is not the pinned " + pin);
    }
    try {
      chain[0].checkValidity(Date.from(clock.instant()));
    } catch (CertificateExpiredException | CertificateNotYetValidException e) {
      throw new UnpinnedCertificateException(
          "the peer's pinned certificate is not valid now: " + e.getMessage());
    }
  }

  @Override
  public void checkClientTrusted(X509Certificate[] chain, String authType)
      throws UnpinnedCertificateException {
    check(chain);
  }

  @Override
  public void checkServerTrusted(X509Certificate[] chain, String authType)
      throws UnpinnedCertificateException {
    check(chain);
  }

  @Override
  public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket)
      throws UnpinnedCertificateException {
    check(chain);
  }

  @Override
  public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket)
      throws UnpinnedCertificateException {
    check(chain);
  }

  @Override
  public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
      throws UnpinnedCertificateException {
    check(chain);
  }

  @Override
  public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
      throws UnpinnedCertificateException {
    check(chain);
  }

  @Override
  public X509Certificate[] getAcceptedIssuers() {
    // No CA is trusted, so none is named in the server's certificate request.
    return new X509Certificate[0];
  }
}
