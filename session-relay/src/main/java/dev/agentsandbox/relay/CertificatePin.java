package dev.agentsandbox.relay;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.cert.CertificateEncodingException;
import java.security.cert.X509Certificate;
import java.util.HexFormat;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The one certificate a peer of a session's channel accepts from the other: the SHA-256 of its DER
 * encoding, as 64 lower-case hex digits. Pinning the exact certificate (not a CA, not a name) means
 * a peer is the holder of that one key pair, made for that one session.
 *
 * @param sha256 the fingerprint, 64 lower-case hex digits
 */
public record CertificatePin(String sha256) {
  private static final Pattern HEX = Pattern.compile("[0-9a-f]{64}");

  public CertificatePin {
    Objects.requireNonNull(sha256, "sha256");
    if (!HEX.matcher(sha256).matches()) {
      throw new IllegalArgumentException(
          "a certificate pin is 64 lower-case hex digits (a SHA-256), not "
              + (sha256.length() > 80 ? sha256.length() + " characters" : "\"" + sha256 + "\""));
    }
  }

  /** The pin of {@code certificate}. */
  public static CertificatePin of(X509Certificate certificate) {
    try {
      return new CertificatePin(HexFormat.of().formatHex(sha256(certificate.getEncoded())));
    } catch (CertificateEncodingException e) {
      throw new IllegalArgumentException("encoding a certificate to pin it: " + e.getMessage(), e);
    }
  }

  /** Whether {@code certificate} is the pinned one (compared in constant time). */
  public boolean matches(X509Certificate certificate) {
    byte[] theirs;
    try {
      theirs = sha256(certificate.getEncoded());
    } catch (CertificateEncodingException e) {
      return false;
    }
    return MessageDigest.isEqual(theirs, HexFormat.of().parseHex(sha256));
  }

  private static byte[] sha256(byte[] bytes) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(bytes);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("this JVM has no SHA-256", e);
    }
  }

  @Override
  public String toString() {
    return "sha256:" + sha256;
  }
}
