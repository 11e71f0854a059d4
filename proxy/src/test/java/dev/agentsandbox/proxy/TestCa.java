package dev.agentsandbox.proxy;

import java.math.BigInteger;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Date;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * A throw-away certificate authority standing in for a public one: the loopback "real" hosts of the
 * inspection tests present certificates it issued (good, expired, for another name), and the proxy
 * is told to trust it as its {@code upstream_ca}.
 */
final class TestCa {
  private final KeyPair keys;
  private final X509Certificate certificate;
  private final X500Name name;

  private TestCa(String cn) throws Exception {
    keys = ecKeys();
    name = new X500Name("CN=" + cn);
    Instant now = Instant.now();
    JcaX509v3CertificateBuilder builder =
        new JcaX509v3CertificateBuilder(
            name,
            new BigInteger(64, new SecureRandom()),
            Date.from(now.minus(1, ChronoUnit.DAYS)),
            Date.from(now.plus(30, ChronoUnit.DAYS)),
            name,
            keys.getPublic());
    builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
    builder.addExtension(
        Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
    certificate = sign(builder);
  }

  static TestCa create(String cn) throws Exception {
    return new TestCa(cn);
  }

  X509Certificate certificate() {
    return certificate;
  }

  String pem() {
    return RunCa.pem(certificate);
  }

  /** A server context presenting a certificate for {@code host} valid from now for a day. */
  SSLContext serverFor(String host) throws Exception {
    Instant now = Instant.now();
    return server(host, now.minus(1, ChronoUnit.HOURS), now.plus(1, ChronoUnit.DAYS));
  }

  /** A server context presenting a certificate for {@code host} valid between the two instants. */
  SSLContext server(String host, Instant notBefore, Instant notAfter) throws Exception {
    KeyPair leaf = ecKeys();
    JcaX509v3CertificateBuilder builder =
        new JcaX509v3CertificateBuilder(
            name,
            new BigInteger(64, new SecureRandom()),
            Date.from(notBefore),
            Date.from(notAfter),
            new X500Name("CN=" + host),
            leaf.getPublic());
    builder.addExtension(
        Extension.subjectAlternativeName,
        false,
        new GeneralNames(new GeneralName(GeneralName.dNSName, host)));
    X509Certificate issued = sign(builder);
    KeyStore store = KeyStore.getInstance("PKCS12");
    store.load(null, null);
    store.setKeyEntry(
        "key", leaf.getPrivate(), new char[0], new X509Certificate[] {issued, certificate});
    KeyManagerFactory factory =
        KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    factory.init(store, new char[0]);
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(factory.getKeyManagers(), null, null);
    return context;
  }

  private X509Certificate sign(JcaX509v3CertificateBuilder builder) throws Exception {
    return new JcaX509CertificateConverter()
        .getCertificate(
            builder.build(new JcaContentSignerBuilder("SHA256withECDSA").build(keys.getPrivate())));
  }

  private static KeyPair ecKeys() throws Exception {
    KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
    generator.initialize(256);
    return generator.generateKeyPair();
  }
}
