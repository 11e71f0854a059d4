package dev.agentsandbox.credentials;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSSigner;
import com.nimbusds.jose.crypto.ECDSASigner;
import com.nimbusds.jose.crypto.RSASSASigner;
import com.nimbusds.jose.jwk.ECKey;
import com.nimbusds.jose.jwk.JWK;
import com.nimbusds.jose.jwk.JWKSet;
import com.nimbusds.jose.jwk.RSAKey;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermission;
import java.text.ParseException;
import java.util.Map;
import java.util.Set;

/**
 * The operator's signing keys: a JWK set file of private keys (EC P-256 or RSA ≥ 2048 bits, each
 * with a {@code kid}) and the {@code kid} to sign with. Rotation without downtime: add the new key
 * to the file, switch the active kid, keep the old key in the file until the tokens it signed have
 * expired (at most the longest run's deadline); verifiers fetch {@link #publicJwks()} and pick the
 * key by the {@code kid} in the token's header.
 *
 * <p>The file is read again whenever its modification time changes, so a rotation needs no restart.
 * It must not be readable by group or others. Thread-safe.
 */
public final class JwtKeyRing {
  private final Path file;
  private final String activeKid;
  private FileTime loadedAt;
  private JWKSet keys;

  /**
   * @throws UnableToIssueCredentialException when the file is unreadable, too open, or lacks the
   *     active key
   */
  public JwtKeyRing(Path file, String activeKid) {
    this.file = file;
    this.activeKid = activeKid;
    reloadIfChanged();
  }

  /** The active key's id. */
  public String activeKid() {
    return activeKid;
  }

  /** The public half of every key in the file, as a JWK set JSON object, for verifiers. */
  public synchronized Map<String, Object> publicJwks() {
    reloadIfChanged();
    return keys.toPublicJWKSet().toJSONObject();
  }

  /** The signer and algorithm of the active key. */
  synchronized Active active() {
    reloadIfChanged();
    JWK jwk = keys.getKeyByKeyId(activeKid);
    try {
      if (jwk instanceof ECKey ec) {
        return new Active(new ECDSASigner(ec), JWSAlgorithm.ES256, activeKid);
      }
      RSAKey rsa = (RSAKey) jwk;
      return new Active(new RSASSASigner(rsa), JWSAlgorithm.RS256, activeKid);
    } catch (JOSEException e) {
      throw new UnableToIssueCredentialException(
          "use JWT signing key " + activeKid + " from " + file + ": " + e.getMessage(), e);
    }
  }

  record Active(JWSSigner signer, JWSAlgorithm algorithm, String kid) {}

  private synchronized void reloadIfChanged() {
    try {
      FileTime modified = Files.getLastModifiedTime(file);
      if (modified.equals(loadedAt)) {
        return;
      }
      Set<PosixFilePermission> perms = Files.getPosixFilePermissions(file);
      if (perms.contains(PosixFilePermission.GROUP_READ)
          || perms.contains(PosixFilePermission.OTHERS_READ)) {
        throw new UnableToIssueCredentialException(
            "read JWT signing keys " + file + ": readable by group or others (chmod 600 it)");
      }
      JWKSet loaded = JWKSet.load(file.toFile());
      JWK active = loaded.getKeyByKeyId(activeKid);
      if (active == null) {
        throw new UnableToIssueCredentialException(
            "read JWT signing keys "
                + file
                + ": no key with kid '"
                + activeKid
                + "' (the file has "
                + loaded.getKeys().stream().map(JWK::getKeyID).toList()
                + ")");
      }
      for (JWK jwk : loaded.getKeys()) {
        if (jwk.getKeyID() == null || !jwk.isPrivate()) {
          throw new UnableToIssueCredentialException(
              "read JWT signing keys " + file + ": every key needs a kid and its private part");
        }
        boolean usable =
            jwk instanceof ECKey ec && ec.getCurve() == com.nimbusds.jose.jwk.Curve.P_256
                || jwk instanceof RSAKey rsa && rsa.size() >= 2048;
        if (!usable) {
          throw new UnableToIssueCredentialException(
              "read JWT signing keys "
                  + file
                  + ": key "
                  + jwk.getKeyID()
                  + " is neither EC P-256 nor RSA of 2048 bits or more");
        }
      }
      keys = loaded;
      loadedAt = modified;
    } catch (IOException | ParseException e) {
      if (keys != null) {
        return; // a rotation half-written: keep signing with what was loaded
      }
      throw new UnableToIssueCredentialException(
          "read JWT signing keys " + file + ": " + e.getMessage(), e);
    }
  }
}
