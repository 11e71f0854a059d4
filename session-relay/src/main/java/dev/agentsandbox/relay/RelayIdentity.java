package dev.agentsandbox.relay;

import java.math.BigInteger;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Instant;
import java.util.Date;
import java.util.Objects;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x500.X500NameBuilder;
import org.bouncycastle.asn1.x500.style.BCStyle;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.CertIOException;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * One end's key pair for one session, made in memory and never written anywhere, with the
 * self-signed certificate the other end pins ({@link CertificatePin}). The relay makes its own at
 * start and prints only the certificate's pin; the control plane makes its own per session and puts
 * only the pin in the pod's spec. So neither private key is ever in a Kubernetes object, an etcd
 * row, a volume or a log.
 *
 * @param keys an EC P-256 key pair
 * @param certificate its self-signed certificate (no CA: it is trusted by its pin alone)
 */
public record RelayIdentity(KeyPair keys, X509Certificate certificate) {
  /** How far back a certificate's validity starts, for clocks a little apart. */
  static final java.time.Duration BACKDATE = java.time.Duration.ofMinutes(10);

  public RelayIdentity {
    Objects.requireNonNull(keys, "keys");
    Objects.requireNonNull(certificate, "certificate");
  }

  /**
   * Whose end this is, written in the certificate's extended key usage for whoever reads it; the
   * pin alone decides trust.
   */
  public enum Role {
    /** The relay, a TLS server. */
    RELAY,
    /** The control plane, a TLS client. */
    CONTROL_PLANE
  }

  /**
   * A fresh key pair and certificate.
   *
   * @param role which end
   * @param runId the run, named in the certificate's subject (for people reading it)
   * @param now the time its validity is counted from (backdated by ten minutes)
   * @param notAfter when it stops being valid: the run's expiry
   */
  public static RelayIdentity generate(Role role, String runId, Instant now, Instant notAfter) {
    Objects.requireNonNull(role, "role");
    Objects.requireNonNull(runId, "runId");
    if (!notAfter.isAfter(now)) {
      throw new IllegalArgumentException("a session identity must expire after it is made");
    }
    try {
      KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
      generator.initialize(new ECGenParameterSpec("secp256r1"), new SecureRandom());
      KeyPair keys = generator.generateKeyPair();
      X500Name subject =
          new X500NameBuilder(BCStyle.INSTANCE)
              .addRDN(
                  BCStyle.CN,
                  (role == Role.RELAY
                          ? "agent-sandbox session relay "
                          : "agent-sandbox control plane ")
                      + runId)
              .build();
      byte[] serial = new byte[16];
      new SecureRandom().nextBytes(serial);
      JcaX509v3CertificateBuilder builder =
          new JcaX509v3CertificateBuilder(
              subject,
              new BigInteger(1, serial),
              Date.from(now.minus(BACKDATE)),
              Date.from(notAfter),
              subject,
              keys.getPublic());
      builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
      builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature));
      builder.addExtension(
          Extension.extendedKeyUsage,
          false,
          new ExtendedKeyUsage(
              role == Role.RELAY ? KeyPurposeId.id_kp_serverAuth : KeyPurposeId.id_kp_clientAuth));
      X509Certificate certificate =
          new JcaX509CertificateConverter()
              .getCertificate(
                  builder.build(
                      new JcaContentSignerBuilder("SHA256withECDSA").build(keys.getPrivate())));
      return new RelayIdentity(keys, certificate);
    } catch (GeneralSecurityException | OperatorCreationException | CertIOException e) {
      throw new IllegalStateException("making a session key pair: " + e.getMessage(), e);
    }
  }

  /** The pin the other end accepts this identity by. */
  public CertificatePin pin() {
    return CertificatePin.of(certificate);
  }

  @Override
  public String toString() {
    // Never the private key, not even its algorithm parameters.
    return "RelayIdentity[" + pin() + "]";
  }
}
