package dev.agentsandbox.relay;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import javax.net.ssl.KeyManager;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;

/**
 * The TLS both ends of a session's channel speak, in one place so they cannot drift apart: TLS 1.3
 * only (no renegotiation, no 0-RTT: the JDK sends no early data, so no replayable first flight),
 * its three AEAD suites, mutual authentication by pinned self-signed certificates ({@link
 * PinnedTrustManager}), and a fresh {@link SSLContext} per end and session, so that no session
 * cache is shared between runs. Every record is authenticated with its sequence number: a changed,
 * dropped, reordered or replayed record fails the connection.
 */
public final class PinnedTls {
  /** The only protocol version either end speaks. */
  public static final String PROTOCOL = "TLSv1.3";

  /** TLS 1.3's AEAD suites (the JDK's TLS 1.3 offers no others). */
  public static final List<String> CIPHER_SUITES =
      List.of("TLS_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256");

  private final SSLContext context;

  private PinnedTls(SSLContext context) {
    this.context = context;
  }

  /** The TLS of one end: it presents {@code own} and accepts only {@code peer}. */
  public static PinnedTls of(RelayIdentity own, CertificatePin peer, Clock clock) {
    try {
      SSLContext context = SSLContext.getInstance(PROTOCOL);
      context.init(
          new KeyManager[] {new OneKeyManager(own)},
          new TrustManager[] {new PinnedTrustManager(peer, clock)},
          new SecureRandom());
      return new PinnedTls(context);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("setting up TLS 1.3: " + e.getMessage(), e);
    }
  }

  /**
   * The server's end over an accepted connection whose first bytes were already read (to tell TLS
   * from anything else); the client must present the pinned certificate.
   */
  public SSLSocket server(Socket accepted, InputStream consumed) throws IOException {
    SSLSocket socket =
        (SSLSocket) context.getSocketFactory().createSocket(accepted, consumed, true);
    SSLParameters parameters = parameters();
    parameters.setNeedClientAuth(true);
    socket.setSSLParameters(parameters);
    socket.setUseClientMode(false);
    return socket;
  }

  /**
   * The client's end, connected to {@code address} and handshaken within {@code timeout}: when this
   * returns, the server proved it holds the pinned certificate's key, and has been shown ours.
   */
  public SSLSocket connect(InetSocketAddress address, Duration timeout) throws IOException {
    Socket plain = new Socket();
    try {
      plain.setTcpNoDelay(true);
      plain.connect(address, (int) timeout.toMillis());
      SSLSocket socket =
          (SSLSocket)
              context
                  .getSocketFactory()
                  .createSocket(plain, address.getHostString(), address.getPort(), true);
      // The address is a pod's IP and the certificate is pinned: no host name to check.
      socket.setSSLParameters(parameters());
      socket.setUseClientMode(true);
      socket.setSoTimeout((int) timeout.toMillis());
      socket.startHandshake();
      socket.setSoTimeout(0);
      return socket;
    } catch (IOException | RuntimeException e) {
      plain.close();
      throw e;
    }
  }

  private SSLParameters parameters() {
    SSLParameters parameters = new SSLParameters();
    parameters.setProtocols(new String[] {PROTOCOL});
    parameters.setCipherSuites(CIPHER_SUITES.toArray(String[]::new));
    parameters.setEndpointIdentificationAlgorithm(null);
    return parameters;
  }
}
