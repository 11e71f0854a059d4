package dev.agentsandbox.credentials;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.nimbusds.jose.JWSVerifier;
import com.nimbusds.jose.crypto.ECDSAVerifier;
import com.nimbusds.jose.crypto.RSASSAVerifier;
import com.nimbusds.jose.jwk.Curve;
import com.nimbusds.jose.jwk.ECKey;
import com.nimbusds.jose.jwk.JWK;
import com.nimbusds.jose.jwk.JWKSet;
import com.nimbusds.jose.jwk.RSAKey;
import com.nimbusds.jose.jwk.gen.ECKeyGenerator;
import com.nimbusds.jose.jwk.gen.RSAKeyGenerator;
import com.nimbusds.jwt.SignedJWT;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JwtIssuerTest {
  private static final Instant NOW = Instant.parse("2026-11-30T12:00:00Z");
  private static final Clock CLOCK = Clock.fixed(NOW, ZoneOffset.UTC);
  private static final RunIdentity RUN =
      new RunIdentity(
          "r1", "helper", Map.of("owner", "alice"), NOW.plusSeconds(900).plusMillis(500));

  @TempDir Path dir;

  private Path writeKeys(List<JWK> keys) throws Exception {
    Path file = dir.resolve("jwt-keys.json");
    Files.writeString(file, new JWKSet(keys).toString(false));
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
    return file;
  }

  /** Verifies as a gateway would: the public JWK set, the key chosen by the header's kid. */
  private static boolean verifies(String token, Map<String, Object> publicJwks) throws Exception {
    SignedJWT jwt = SignedJWT.parse(token);
    JWK key = JWKSet.parse(publicJwks).getKeyByKeyId(jwt.getHeader().getKeyID());
    if (key == null) {
      return false;
    }
    JWSVerifier verifier =
        key instanceof ECKey ec ? new ECDSAVerifier(ec) : new RSASSAVerifier((RSAKey) key);
    return jwt.verify(verifier);
  }

  @Test
  void claimsNameTheRunAndExpireAtItsDeadline() throws Exception {
    ECKey k1 = new ECKeyGenerator(Curve.P_256).keyID("k1").generate();
    JwtIssuer issuer = new JwtIssuer(new JwtKeyRing(writeKeys(List.of(k1)), "k1"), "cp", CLOCK);
    IssuedCredential c = issuer.issue("gateway", RUN, "llm-gateway");
    SignedJWT jwt = SignedJWT.parse(c.value());
    assertThat(jwt.getHeader().getKeyID()).isEqualTo("k1");
    assertThat(jwt.getJWTClaimsSet().getSubject()).isEqualTo("helper");
    assertThat(jwt.getJWTClaimsSet().getAudience()).containsExactly("llm-gateway");
    assertThat(jwt.getJWTClaimsSet().getStringClaim("run_id")).isEqualTo("r1");
    assertThat(jwt.getJWTClaimsSet().getJSONObjectClaim("labels")).containsEntry("owner", "alice");
    assertThat(jwt.getJWTClaimsSet().getIssuer()).isEqualTo("cp");
    // exp is whole seconds, never after the deadline
    assertThat(jwt.getJWTClaimsSet().getExpirationTime().toInstant())
        .isEqualTo(NOW.plusSeconds(900))
        .isBeforeOrEqualTo(RUN.deadline());
    assertThat(c.expiresAt()).isEqualTo(RUN.deadline());
    assertThat(verifies(c.value(), issuer.keys().publicJwks())).isTrue();
    assertThat(c.toString()).doesNotContain(c.value());
  }

  @Test
  void rotationKeepsOldTokensVerifiableWithoutARestart() throws Exception {
    ECKey k1 = new ECKeyGenerator(Curve.P_256).keyID("k1").generate();
    RSAKey k2 = new RSAKeyGenerator(2048).keyID("k2").generate();
    Path file = writeKeys(List.of(k1));
    JwtKeyRing ring = new JwtKeyRing(file, "k1");
    String old = new JwtIssuer(ring, "cp", CLOCK).issue("g", RUN, "aud").value();

    // the operator adds k2 to the file; the ring picks it up by modification time
    Files.writeString(file, new JWKSet(List.of(k1, k2)).toString(false));
    Files.setLastModifiedTime(file, FileTime.from(NOW.plusSeconds(60)));
    JwtIssuer rotated = new JwtIssuer(new JwtKeyRing(file, "k2"), "cp", CLOCK);
    String fresh = rotated.issue("g", RUN, "aud").value();
    assertThat(SignedJWT.parse(fresh).getHeader().getKeyID()).isEqualTo("k2");
    Map<String, Object> published = rotated.keys().publicJwks();
    assertThat(verifies(old, published)).isTrue();
    assertThat(verifies(fresh, published)).isTrue();
    // published keys are public halves only
    @SuppressWarnings("unchecked")
    List<Map<String, Object>> keys = (List<Map<String, Object>>) published.get("keys");
    assertThat(keys).hasSize(2).allSatisfy(k -> assertThat(k).doesNotContainKeys("d", "p", "q"));

    // once k1 is retired, a token it signed no longer verifies
    Files.writeString(file, new JWKSet(List.of(k2)).toString(false));
    Files.setLastModifiedTime(file, FileTime.from(NOW.plusSeconds(120)));
    assertThat(verifies(old, rotated.keys().publicJwks())).isFalse();
  }

  @Test
  void aTamperedTokenDoesNotVerify() throws Exception {
    ECKey k1 = new ECKeyGenerator(Curve.P_256).keyID("k1").generate();
    JwtIssuer issuer = new JwtIssuer(new JwtKeyRing(writeKeys(List.of(k1)), "k1"), "cp", CLOCK);
    String[] parts = issuer.issue("g", RUN, "aud").value().split("\\.");
    String otherRun =
        java.util.Base64.getUrlEncoder()
            .withoutPadding()
            .encodeToString(
                new String(java.util.Base64.getUrlDecoder().decode(parts[1]), "UTF-8")
                    .replace("\"r1\"", "\"r2\"")
                    .getBytes("UTF-8"));
    assertThat(verifies(parts[0] + "." + otherRun + "." + parts[2], issuer.keys().publicJwks()))
        .isFalse();
  }

  @Test
  void badKeyFilesAreRefusedWithTheReason() throws Exception {
    ECKey k1 = new ECKeyGenerator(Curve.P_256).keyID("k1").generate();
    Path file = writeKeys(List.of(k1));
    assertThatThrownBy(() -> new JwtKeyRing(file, "k9"))
        .isInstanceOf(UnableToIssueCredentialException.class)
        .hasMessageContaining("no key with kid 'k9'");
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
    assertThatThrownBy(() -> new JwtKeyRing(file, "k1"))
        .hasMessageContaining("readable by group or others");
    Path pub = writeKeys(List.of(k1.toPublicJWK()));
    assertThatThrownBy(() -> new JwtKeyRing(pub, "k1")).hasMessageContaining("private part");
    Path weak = writeKeys(List.of(new RSAKeyGenerator(1024, true).keyID("w").generate()));
    assertThatThrownBy(() -> new JwtKeyRing(weak, "w")).hasMessageContaining("2048");
  }

  @Test
  void aRunPastItsDeadlineGetsNoToken() throws Exception {
    ECKey k1 = new ECKeyGenerator(Curve.P_256).keyID("k1").generate();
    JwtIssuer issuer = new JwtIssuer(new JwtKeyRing(writeKeys(List.of(k1)), "k1"), "cp", CLOCK);
    RunIdentity over = new RunIdentity("r1", "helper", Map.of(), NOW);
    assertThatThrownBy(() -> issuer.issue("g", over, "aud")).hasMessageContaining("has passed");
  }
}
