package dev.agentsandbox.credentials;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JOSEObjectType;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import java.time.Clock;
import java.time.Instant;
import java.util.Date;
import java.util.UUID;

/**
 * Mints a JWT for one run: {@code sub} = the agent, {@code run_id}, {@code labels}, {@code aud}
 * from the agent's configuration, {@code iss} the control plane, {@code exp} at the run's deadline,
 * {@code kid} of the active key in the header. For an LLM gateway or internal API that verifies it
 * against the control plane's public keys. Thread-safe.
 */
public final class JwtIssuer {
  private final JwtKeyRing keys;
  private final String issuer;
  private final Clock clock;

  public JwtIssuer(JwtKeyRing keys, String issuer, Clock clock) {
    this.keys = keys;
    this.issuer = issuer;
    this.clock = clock;
  }

  /** The key ring, for serving its public keys. */
  public JwtKeyRing keys() {
    return keys;
  }

  /** Signs a token for {@code run}, audience {@code audience}, expiring at the run's deadline. */
  public IssuedCredential issue(String name, RunIdentity run, String audience) {
    Instant now = clock.instant();
    if (!run.deadline().isAfter(now)) {
      throw new UnableToIssueCredentialException(
          "mint JWT credential "
              + name
              + " for run "
              + run.runId()
              + ": the run's deadline "
              + run.deadline()
              + " has passed");
    }
    JwtKeyRing.Active key = keys.active();
    JWTClaimsSet claims =
        new JWTClaimsSet.Builder()
            .issuer(issuer)
            .subject(run.agent())
            .audience(audience)
            .issueTime(Date.from(now))
            .notBeforeTime(Date.from(now))
            .expirationTime(Date.from(run.deadline()))
            .jwtID(UUID.randomUUID().toString())
            .claim("run_id", run.runId())
            .claim("labels", run.labels())
            .build();
    SignedJWT jwt =
        new SignedJWT(
            new JWSHeader.Builder(key.algorithm())
                .keyID(key.kid())
                .type(JOSEObjectType.JWT)
                .build(),
            claims);
    try {
      jwt.sign(key.signer());
    } catch (JOSEException e) {
      throw new UnableToIssueCredentialException(
          "sign JWT credential "
              + name
              + " for run "
              + run.runId()
              + " with key "
              + key.kid()
              + ": "
              + e.getMessage(),
          e);
    }
    return new IssuedCredential(name, "jwt", jwt.serialize(), run.deadline());
  }
}
