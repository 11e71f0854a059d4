package dev.agentsandbox.testing;

import java.io.IOException;
import java.io.StringWriter;
import java.math.BigInteger;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Date;
import java.util.List;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * A certificate authority made for one test, standing in for a public one: the loopback HTTPS
 * servers the tests stand up present certificates it issued, and what must trust them (a client, a
 * run's proxy as its {@code upstream_ca}) is given {@link #pem()}.
 */
public final class TestAuthority {
  private final KeyPair keys;
  private final X509Certificate certificate;

  private TestAuthority(String name) throws Exception {
    keys = keys();
    X500Name subject = new X500Name("CN=" + name);
    Instant now = Instant.now();
    JcaX509v3CertificateBuilder builder =
        new JcaX509v3CertificateBuilder(
            subject,
            new BigInteger(64, new SecureRandom()),
            Date.from(now.minus(1, ChronoUnit.HOURS)),
            Date.from(now.plus(1, ChronoUnit.DAYS)),
            subject,
            keys.getPublic());
    JcaX509ExtensionUtils utils = new JcaX509ExtensionUtils();
    builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
    builder.addExtension(
        Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
    builder.addExtension(
        Extension.subjectKeyIdentifier, false, utils.createSubjectKeyIdentifier(keys.getPublic()));
    certificate = sign(builder);
  }

  /** A new authority named {@code name}. */
  public static TestAuthority create(String name) throws Exception {
    return new TestAuthority(name);
  }

  /** The authority's certificate. */
  public X509Certificate certificate() {
    return certificate;
  }

  /** The authority's certificate as PEM text. */
  public String pem() throws IOException {
    StringWriter text = new StringWriter();
    try (JcaPEMWriter writer = new JcaPEMWriter(text)) {
      writer.writeObject(certificate);
    }
    return text.toString();
  }

  /** A server context presenting a certificate for {@code names}, valid for a day. */
  public SSLContext serverContext(List<String> names) throws Exception {
    KeyPair server = keys();
    Instant now = Instant.now();
    JcaX509v3CertificateBuilder builder =
        new JcaX509v3CertificateBuilder(
            certificate,
            new BigInteger(64, new SecureRandom()),
            Date.from(now.minus(1, ChronoUnit.HOURS)),
            Date.from(now.plus(1, ChronoUnit.DAYS)),
            new X500Name("CN=" + names.get(0)),
            server.getPublic());
    JcaX509ExtensionUtils utils = new JcaX509ExtensionUtils();
    builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
    builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature));
    builder.addExtension(
        Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_serverAuth));
    builder.addExtension(
        Extension.subjectAlternativeName,
        false,
        new GeneralNames(
            names.stream()
                .map(n -> new GeneralName(GeneralName.dNSName, n))
                .toArray(GeneralName[]::new)));
    builder.addExtension(
        Extension.authorityKeyIdentifier, false, utils.createAuthorityKeyIdentifier(certificate));
    builder.addExtension(
        Extension.subjectKeyIdentifier,
        false,
        utils.createSubjectKeyIdentifier(server.getPublic()));
    X509Certificate issued = sign(builder);
    KeyStore store = KeyStore.getInstance("PKCS12");
    store.load(null, null);
    store.setKeyEntry(
        "server", server.getPrivate(), new char[0], new X509Certificate[] {issued, certificate});
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

  private static KeyPair keys() throws Exception {
    KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
    generator.initialize(256);
    return generator.generateKeyPair();
  }
}
