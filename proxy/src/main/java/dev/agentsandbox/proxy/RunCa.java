package dev.agentsandbox.proxy;

import java.math.BigInteger;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Date;
import java.util.List;
import org.bouncycastle.asn1.DEROctetString;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.GeneralSubtree;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.asn1.x509.NameConstraints;
import org.bouncycastle.cert.CertIOException;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.ContentSigner;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * The certificate authority one run's proxy makes for itself when its policy inspects hosts
 * (docs/architecture.md invariant 12). Two certificates, both made in this process:
 *
 * <ul>
 *   <li>a <b>root</b>, what the sandbox trusts ({@link #certificatePem()}), whose key signs the
 *       intermediate and is then dropped: it is a local variable of {@link #create}, never stored,
 *       so not even this process can sign anything else under the root afterwards;
 *   <li>an <b>intermediate</b>, which signs one leaf per inspected host; its EC P-256 key is held
 *       only in this object — never written to a file, a log, a decision or the audit, never
 *       exported.
 * </ul>
 *
 * Both are name-constrained (X.509 name constraints, critical) to exactly the run's inspected
 * hosts, with every IPv4 and IPv6 address excluded. The intermediate's constraints are what every
 * validator enforces (the JDK's PKIX does not apply a trust anchor's own constraints; OpenSSL, Go
 * and NSS apply both), so a client that trusts the root trusts it for these hosts and nothing else
 * even if the intermediate's key leaked. The intermediate may sign end-entity certificates only
 * (path length 0); everything expires at the run's end. Thread-safe: immutable after construction.
 */
final class RunCa {
  private static final String SIGNATURE = "SHA256withECDSA";
  private static final Duration CLOCK_SKEW = Duration.ofMinutes(5);

  private final X509Certificate root;
  private final KeyPair keys;
  private final X509Certificate certificate;
  private final Instant notAfter;
  private final SecureRandom random = new SecureRandom();

  private RunCa(X509Certificate root, KeyPair keys, X509Certificate certificate, Instant notAfter) {
    this.root = root;
    this.keys = keys;
    this.certificate = certificate;
    this.notAfter = notAfter;
  }

  /**
   * Makes the run's CA for exactly {@code hosts}, expiring at {@code notAfter}.
   *
   * @throws IllegalArgumentException when {@code notAfter} has passed or there is no host
   */
  static RunCa create(String runId, List<String> hosts, Instant now, Instant notAfter) {
    if (hosts.isEmpty()) {
      throw new IllegalArgumentException("a run CA is made for at least one inspected host");
    }
    if (!notAfter.isAfter(now)) {
      throw new IllegalArgumentException(
          "the run CA would expire at "
              + notAfter
              + ", which has passed (the clock says "
              + now
              + ")");
    }
    try {
      String run = runId.isEmpty() ? "(no run id)" : runId;
      SecureRandom random = new SecureRandom();
      // The root's key lives only in this block: it signs the intermediate and is dropped.
      KeyPair rootKeys = newKeys();
      X500Name rootName = new X500Name("CN=agent-sandbox run " + run + " root CA,O=agent-sandbox");
      X509v3CertificateBuilder rootBuilder =
          new JcaX509v3CertificateBuilder(
              rootName,
              serial(random),
              Date.from(now.minus(CLOCK_SKEW)),
              Date.from(notAfter),
              rootName,
              rootKeys.getPublic());
      JcaX509ExtensionUtils extensions = new JcaX509ExtensionUtils();
      rootBuilder.addExtension(Extension.basicConstraints, true, new BasicConstraints(1));
      rootBuilder.addExtension(
          Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
      rootBuilder.addExtension(
          Extension.subjectKeyIdentifier,
          false,
          extensions.createSubjectKeyIdentifier(rootKeys.getPublic()));
      rootBuilder.addExtension(Extension.nameConstraints, true, constraints(hosts));
      X509Certificate root = convert(rootBuilder, rootKeys.getPrivate());

      KeyPair keys = newKeys();
      X509v3CertificateBuilder builder =
          new JcaX509v3CertificateBuilder(
              root,
              serial(random),
              Date.from(now.minus(CLOCK_SKEW)),
              Date.from(notAfter),
              new X500Name("CN=agent-sandbox run " + run + " CA,O=agent-sandbox"),
              keys.getPublic());
      builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(0));
      builder.addExtension(
          Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
      builder.addExtension(
          Extension.subjectKeyIdentifier,
          false,
          extensions.createSubjectKeyIdentifier(keys.getPublic()));
      builder.addExtension(
          Extension.authorityKeyIdentifier,
          false,
          extensions.createAuthorityKeyIdentifier(root.getPublicKey()));
      builder.addExtension(Extension.nameConstraints, true, constraints(hosts));
      X509Certificate certificate = convert(builder, rootKeys.getPrivate());
      return new RunCa(root, keys, certificate, notAfter);
    } catch (GeneralSecurityException | CertIOException | OperatorCreationException e) {
      throw new IllegalStateException("making the run's CA failed: " + e.getMessage(), e);
    }
  }

  /** The permitted host names, and every address excluded (an iPAddress subtree of /0 each). */
  private static NameConstraints constraints(List<String> hosts) {
    GeneralSubtree[] permitted =
        hosts.stream()
            .map(host -> new GeneralSubtree(new GeneralName(GeneralName.dNSName, host)))
            .toArray(GeneralSubtree[]::new);
    GeneralSubtree[] excluded = {
      new GeneralSubtree(new GeneralName(GeneralName.iPAddress, new DEROctetString(new byte[8]))),
      new GeneralSubtree(new GeneralName(GeneralName.iPAddress, new DEROctetString(new byte[32])))
    };
    return new NameConstraints(permitted, excluded);
  }

  /** A leaf certificate and its key for one inspected host, signed by this CA. */
  Leaf issue(String host, Instant now) {
    try {
      KeyPair leafKeys = newKeys();
      X509v3CertificateBuilder builder =
          new JcaX509v3CertificateBuilder(
              certificate,
              serial(random),
              Date.from(now.minus(CLOCK_SKEW)),
              Date.from(notAfter),
              new X500Name("CN=" + host),
              leafKeys.getPublic());
      JcaX509ExtensionUtils extensions = new JcaX509ExtensionUtils();
      builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
      builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature));
      builder.addExtension(
          Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_serverAuth));
      builder.addExtension(
          Extension.subjectAlternativeName,
          true,
          new GeneralNames(new GeneralName(GeneralName.dNSName, host)));
      builder.addExtension(
          Extension.authorityKeyIdentifier,
          false,
          extensions.createAuthorityKeyIdentifier(certificate.getPublicKey()));
      builder.addExtension(
          Extension.subjectKeyIdentifier,
          false,
          extensions.createSubjectKeyIdentifier(leafKeys.getPublic()));
      return new Leaf(convert(builder, keys.getPrivate()), leafKeys.getPrivate());
    } catch (GeneralSecurityException | CertIOException | OperatorCreationException e) {
      throw new IllegalStateException(
          "making the certificate for " + host + " failed: " + e.getMessage(), e);
    }
  }

  /** The root's certificate: public, what the sandbox trusts. */
  X509Certificate root() {
    return root;
  }

  /** The intermediate's certificate, which signs the leaves and goes with each of them. */
  X509Certificate certificate() {
    return certificate;
  }

  /** The root's certificate as PEM text: the one thing of the CA the sandbox is given. */
  String certificatePem() {
    return pem(root);
  }

  /** When the CA and every certificate it signed expire. */
  Instant notAfter() {
    return notAfter;
  }

  /** PEM text of a certificate. */
  static String pem(X509Certificate certificate) {
    try {
      return "-----BEGIN CERTIFICATE-----\n"
          + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(certificate.getEncoded())
          + "\n-----END CERTIFICATE-----\n";
    } catch (java.security.cert.CertificateEncodingException e) {
      throw new IllegalStateException("encoding a certificate failed", e);
    }
  }

  /** Never the key: a CA shown in a log line or an exception names its subject and expiry only. */
  @Override
  public String toString() {
    return "RunCa[" + root.getSubjectX500Principal() + ", until " + notAfter + "]";
  }

  private static KeyPair newKeys() throws GeneralSecurityException {
    KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
    generator.initialize(new ECGenParameterSpec("secp256r1"));
    return generator.generateKeyPair();
  }

  private static BigInteger serial(SecureRandom random) {
    return new BigInteger(127, random).add(BigInteger.ONE);
  }

  private static X509Certificate convert(X509v3CertificateBuilder builder, PrivateKey signer)
      throws OperatorCreationException, GeneralSecurityException {
    ContentSigner contentSigner = new JcaContentSignerBuilder(SIGNATURE).build(signer);
    return new JcaX509CertificateConverter().getCertificate(builder.build(contentSigner));
  }

  /**
   * A leaf certificate for one inspected host and its key, held by the proxy's TLS context only.
   *
   * @param certificate the host's certificate, signed by the run's CA
   * @param key its private key
   */
  record Leaf(X509Certificate certificate, PrivateKey key) {
    @Override
    public String toString() {
      return "Leaf[" + certificate.getSubjectX500Principal() + "]";
    }
  }
}
