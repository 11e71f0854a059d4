package dev.agentsandbox.relay;

import java.net.Socket;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedKeyManager;

/** Offers one identity, whatever the peer asks for: each end has exactly one key. Thread-safe. */
final class OneKeyManager extends X509ExtendedKeyManager {
  private static final String ALIAS = "session";
  private final RelayIdentity identity;

  OneKeyManager(RelayIdentity identity) {
    this.identity = identity;
  }

  @Override
  public String[] getClientAliases(String keyType, Principal[] issuers) {
    return new String[] {ALIAS};
  }

  @Override
  public String chooseClientAlias(String[] keyType, Principal[] issuers, Socket socket) {
    return ALIAS;
  }

  @Override
  public String chooseEngineClientAlias(String[] keyType, Principal[] issuers, SSLEngine engine) {
    return ALIAS;
  }

  @Override
  public String[] getServerAliases(String keyType, Principal[] issuers) {
    return new String[] {ALIAS};
  }

  @Override
  public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
    return "EC".equals(keyType) ? ALIAS : null;
  }

  @Override
  public String chooseEngineServerAlias(String keyType, Principal[] issuers, SSLEngine engine) {
    return "EC".equals(keyType) ? ALIAS : null;
  }

  @Override
  public X509Certificate[] getCertificateChain(String alias) {
    return ALIAS.equals(alias) ? new X509Certificate[] {identity.certificate()} : null;
  }

  @Override
  public PrivateKey getPrivateKey(String alias) {
    return ALIAS.equals(alias) ? identity.keys().getPrivate() : null;
  }
}
