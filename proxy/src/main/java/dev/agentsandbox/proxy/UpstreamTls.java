package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.net.Reason;
import io.netty.buffer.ByteBufAllocator;
import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.CertPathValidatorException;
import java.security.cert.Certificate;
import java.security.cert.CertificateExpiredException;
import java.security.cert.CertificateFactory;
import java.security.cert.CertificateNotYetValidException;
import java.util.Collection;
import java.util.Optional;
import javax.net.ssl.SSLException;
import javax.net.ssl.TrustManagerFactory;

/**
 * TLS to an inspected host's real server, re-originated by the proxy with full verification: the
 * chain checked against the system's trust store (the proxy runtime's {@code cacerts}) or the
 * operator's own bundle, the host name checked (endpoint identification {@code HTTPS}), and the
 * server name sent (SNI) the host itself. A failure is classified into the reason a refusal names.
 * Thread-safe.
 */
final class UpstreamTls {
  private final SslContext context;

  private UpstreamTls(SslContext context) {
    this.context = context;
  }

  /**
   * The context verifying with {@code pem} (PEM certificates) when given, else the system's store.
   *
   * @throws InvalidProxyConfigException when the bundle holds no certificate
   */
  static UpstreamTls create(Optional<String> pem) {
    try {
      TrustManagerFactory trust =
          TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      if (pem.isPresent()) {
        KeyStore store = KeyStore.getInstance("PKCS12");
        store.load(null, null);
        Collection<? extends Certificate> certificates =
            CertificateFactory.getInstance("X.509")
                .generateCertificates(
                    new ByteArrayInputStream(pem.get().getBytes(StandardCharsets.US_ASCII)));
        if (certificates.isEmpty()) {
          throw new InvalidProxyConfigException("inspect.upstream_ca: holds no certificate");
        }
        int i = 0;
        for (Certificate certificate : certificates) {
          store.setCertificateEntry("upstream-" + i++, certificate);
        }
        trust.init(store);
      } else {
        trust.init((KeyStore) null);
      }
      SslContext context =
          SslContextBuilder.forClient()
              .sslProvider(SslProvider.JDK)
              .trustManager(trust)
              .endpointIdentificationAlgorithm("HTTPS")
              .protocols("TLSv1.3", "TLSv1.2")
              .applicationProtocolConfig(
                  new ApplicationProtocolConfig(
                      ApplicationProtocolConfig.Protocol.ALPN,
                      ApplicationProtocolConfig.SelectorFailureBehavior.NO_ADVERTISE,
                      ApplicationProtocolConfig.SelectedListenerFailureBehavior.ACCEPT,
                      ApplicationProtocolNames.HTTP_1_1))
              .build();
      return new UpstreamTls(context);
    } catch (GeneralSecurityException | java.io.IOException e) {
      throw new InvalidProxyConfigException(
          "inspect.upstream_ca: the certificates could not be read: " + Echo.of(e.getMessage()));
    }
  }

  /** A handler for one connection to {@code host}: SNI {@code host}, its name verified. */
  SslHandler newHandler(ByteBufAllocator alloc, String host, int port) {
    SslHandler handler = context.newHandler(alloc, host, port);
    handler.setHandshakeTimeoutMillis(10_000);
    return handler;
  }

  /**
   * Why a handshake with {@code host} failed, as a refusal: {@link Reason#UPSTREAM_CERTIFICATE}
   * when the certificate did not verify, with what was wrong; else {@link Reason#UPSTREAM_TLS}.
   */
  static Failure classify(Throwable cause, String host) {
    for (Throwable t = cause; t != null; t = t.getCause()) {
      if (t instanceof CertificateExpiredException) {
        return new Failure(Reason.UPSTREAM_CERTIFICATE, host + "'s certificate has expired");
      }
      if (t instanceof CertificateNotYetValidException) {
        return new Failure(Reason.UPSTREAM_CERTIFICATE, host + "'s certificate is not valid yet");
      }
      if (t instanceof java.security.cert.CertificateException
          && String.valueOf(t.getMessage()).startsWith("No subject alternative")) {
        return new Failure(
            Reason.UPSTREAM_CERTIFICATE, host + "'s certificate is issued for another name");
      }
      if (t instanceof CertPathValidatorException validation) {
        String detail =
            switch (validation.getReason()) {
              case CertPathValidatorException.BasicReason.EXPIRED ->
                  host + "'s certificate (or one above it) has expired";
              case CertPathValidatorException.BasicReason.NOT_YET_VALID ->
                  host + "'s certificate (or one above it) is not valid yet";
              default ->
                  host + "'s certificate chain did not verify (" + Echo.of(t.getMessage()) + ")";
            };
        return new Failure(Reason.UPSTREAM_CERTIFICATE, detail);
      }
      if (t instanceof java.security.cert.CertPathBuilderException
          || String.valueOf(t.getMessage()).contains("PKIX path building failed")) {
        return new Failure(
            Reason.UPSTREAM_CERTIFICATE,
            host + "'s certificate is issued by no authority the proxy trusts");
      }
    }
    String message = cause instanceof SSLException ? cause.getMessage() : cause.toString();
    return new Failure(
        Reason.UPSTREAM_TLS, "the TLS handshake with " + host + " failed: " + Echo.of(message));
  }

  /** A handshake failure as a refusal's reason and detail. */
  record Failure(Reason reason, String detail) {}
}
