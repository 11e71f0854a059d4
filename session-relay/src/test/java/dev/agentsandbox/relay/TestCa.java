package dev.agentsandbox.relay;

import java.math.BigInteger;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * A certificate authority made in the test, for certificates an attacker could plausibly hold: the
 * right subject, a valid signature by a CA, just not the pinned key.
 */
final class TestCa {
  final KeyPair keys;
  final X509Certificate certificate;

  TestCa(String name) throws Exception {
    keys = ecKeys();
    certificate = sign(name, keys, new X500Name("CN=" + name), keys, true, Instant.now());
  }

  static KeyPair ecKeys() throws Exception {
    KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
    generator.initialize(new ECGenParameterSpec("secp256r1"));
    return generator.generateKeyPair();
  }

  /** A leaf for {@code subject} signed by this CA, with a fresh key. */
  Leaf issue(String subject, Instant notBefore) throws Exception {
    KeyPair leafKeys = ecKeys();
    return new Leaf(
        leafKeys,
        new X509Certificate[] {
          sign(
              subject,
              leafKeys,
              new X500Name(certificate.getSubjectX500Principal().getName()),
              keys,
              false,
              notBefore),
          certificate
        });
  }

  record Leaf(KeyPair keys, X509Certificate[] chain) {}

  private static X509Certificate sign(
      String subject,
      KeyPair subjectKeys,
      X500Name issuer,
      KeyPair issuerKeys,
      boolean ca,
      Instant notBefore)
      throws Exception {
    JcaX509v3CertificateBuilder builder =
        new JcaX509v3CertificateBuilder(
            issuer,
            BigInteger.valueOf(System.nanoTime()),
            Date.from(notBefore.minus(Duration.ofMinutes(1))),
            Date.from(notBefore.plus(Duration.ofDays(1))),
            new X500Name("CN=" + subject),
            subjectKeys.getPublic());
    builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(ca));
    return new JcaX509CertificateConverter()
        .getCertificate(
            builder.build(
                new JcaContentSignerBuilder("SHA256withECDSA").build(issuerKeys.getPrivate())));
  }
}
