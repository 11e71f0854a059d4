package dev.agentsandbox.relay;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.security.KeyPair;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.time.Clock;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;

/**
 * Clients that try to reach a relay's runner without being the session's control plane. Each knows
 * the relay's pin (it is public: it is in the relay's log) and so gets as far as the relay's check
 * of the client. None of them holds the control plane's key.
 */
final class Attacker {
  private Attacker() {}

  /** A TLS context presenting {@code chain} (or nothing), accepting the relay by its pin. */
  static SSLContext context(
      String protocol, KeyPair keys, X509Certificate[] chain, CertificatePin relay)
      throws Exception {
    SSLContext context = SSLContext.getInstance(protocol);
    javax.net.ssl.KeyManager[] managers = null;
    if (chain != null) {
      KeyStore store = KeyStore.getInstance("PKCS12");
      store.load(null, null);
      char[] password = "attacker".toCharArray();
      store.setKeyEntry("attacker", keys.getPrivate(), password, chain);
      KeyManagerFactory factory = KeyManagerFactory.getInstance("PKIX");
      factory.init(store, password);
      managers = factory.getKeyManagers();
    }
    context.init(
        managers, new TrustManager[] {new PinnedTrustManager(relay, Clock.systemUTC())}, null);
    return context;
  }

  /**
   * Connects with {@code context} speaking only {@code protocol}, sends {@code frames} once the
   * handshake (as this side sees it) is done, and reads until the relay closes; returns whether
   * anything came back (nothing should: the runner's greeting would be the first thing).
   */
  static boolean tryWith(
      SSLContext context, String protocol, InetSocketAddress relay, byte[] frames)
      throws IOException {
    try (Socket plain = new Socket()) {
      plain.connect(relay, 5000);
      SSLSocket socket =
          (SSLSocket)
              context.getSocketFactory().createSocket(plain, "relay", relay.getPort(), true);
      socket.setEnabledProtocols(new String[] {protocol});
      socket.setSoTimeout(15_000);
      try {
        socket.startHandshake();
        socket.getOutputStream().write(frames);
        socket.getOutputStream().flush();
        return socket.getInputStream().read() >= 0;
      } catch (IOException e) {
        return false;
      }
    }
  }

  /** Sends raw bytes on a plain connection and reads until it is closed. */
  static boolean tryPlain(InetSocketAddress relay, byte[] bytes) throws IOException {
    try (Socket socket = new Socket()) {
      socket.connect(relay, 5000);
      socket.setSoTimeout(15_000);
      socket.getOutputStream().write(bytes);
      socket.getOutputStream().flush();
      InputStream in = socket.getInputStream();
      try {
        return in.read() >= 0;
      } catch (IOException e) {
        return false;
      }
    }
  }
}
