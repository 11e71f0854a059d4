package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.security.cert.CertPathValidator;
import java.security.cert.CertPathValidatorException;
import java.security.cert.CertificateFactory;
import java.security.cert.PKIXParameters;
import java.security.cert.TrustAnchor;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Date;
import java.util.List;
import java.util.Set;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralSubtree;
import org.bouncycastle.asn1.x509.NameConstraints;
import org.bouncycastle.cert.jcajce.JcaX509CertificateHolder;
import org.junit.jupiter.api.Test;

/**
 * The run's CA: constrained to exactly the inspected hosts as a standard validator sees it (the
 * JDK's PKIX), allowed to sign end-entity certificates only, expiring with the run, and never
 * showing its key.
 */
class RunCaTest {
  private static final Instant NOW = Instant.now();
  private static final Instant END = NOW.plus(15, ChronoUnit.MINUTES);

  private static void validate(RunCa ca, X509Certificate... chain) throws Exception {
    CertPathValidator validator = CertPathValidator.getInstance("PKIX");
    PKIXParameters parameters = new PKIXParameters(Set.of(new TrustAnchor(ca.root(), null)));
    parameters.setRevocationEnabled(false);
    parameters.setDate(Date.from(NOW));
    validator.validate(
        CertificateFactory.getInstance("X.509").generateCertPath(List.of(chain)), parameters);
  }

  @Test
  void aLeafForAnInspectedHostValidates() throws Exception {
    RunCa ca = RunCa.create("r1", List.of("api.github.com", "uploads.github.com"), NOW, END);
    validate(ca, ca.issue("api.github.com", NOW).certificate(), ca.certificate());
    validate(ca, ca.issue("uploads.github.com", NOW).certificate(), ca.certificate());
  }

  @Test
  void theNameConstraintsAreCriticalAndNameExactlyTheInspectedHosts() throws Exception {
    RunCa ca = RunCa.create("r1", List.of("api.github.com"), NOW, END);
    for (X509Certificate certificate : List.of(ca.root(), ca.certificate())) {
      assertThat(certificate.getCriticalExtensionOIDs())
          .contains(Extension.nameConstraints.getId(), Extension.basicConstraints.getId());
      NameConstraints constraints =
          NameConstraints.getInstance(
              new JcaX509CertificateHolder(certificate)
                  .getExtension(Extension.nameConstraints)
                  .getParsedValue());
      assertThat(constraints.getPermittedSubtrees())
          .extracting(GeneralSubtree::getBase)
          .containsExactly(new GeneralName(GeneralName.dNSName, "api.github.com"));
      assertThat(constraints.getExcludedSubtrees())
          .as("every IPv4 and IPv6 address")
          .hasSize(2)
          .allSatisfy(s -> assertThat(s.getBase().getTagNo()).isEqualTo(GeneralName.iPAddress));
    }
    assertThat(ca.certificate().getBasicConstraints()).as("path length 0").isZero();
    assertThat(ca.root().getBasicConstraints()).as("one intermediate below the root").isEqualTo(1);
  }

  @Test
  void evenWithItsOwnKeyTheCaCannotVouchForAnotherHost() throws Exception {
    // What a leaked key could sign: a certificate for a host that is not inspected.
    RunCa ca = RunCa.create("r1", List.of("api.github.com"), NOW, END);
    for (String other : List.of("evil.example", "github.com", "api.github.com.evil.example")) {
      X509Certificate forged = ca.issue(other, NOW).certificate();
      assertThatThrownBy(() -> validate(ca, forged, ca.certificate()))
          .as(other)
          .isInstanceOf(CertPathValidatorException.class)
          .hasMessageContaining("name");
    }
  }

  @Test
  void aLeafCannotSignForAnything() throws Exception {
    RunCa ca = RunCa.create("r1", List.of("api.github.com"), NOW, END);
    RunCa.Leaf leaf = ca.issue("api.github.com", NOW);
    assertThat(leaf.certificate().getBasicConstraints()).as("not a CA").isEqualTo(-1);
    assertThat(leaf.certificate().getExtendedKeyUsage()).containsExactly("1.3.6.1.5.5.7.3.1");
  }

  @Test
  void everyCertificateExpiresWithTheRun() throws Exception {
    RunCa ca = RunCa.create("r1", List.of("api.github.com"), NOW, END);
    assertThat(ca.certificate().getNotAfter().toInstant())
        .isEqualTo(END.truncatedTo(ChronoUnit.SECONDS));
    assertThat(ca.issue("api.github.com", NOW).certificate().getNotAfter())
        .isEqualTo(ca.certificate().getNotAfter());
    assertThatThrownBy(() -> RunCa.create("r1", List.of("a.example"), NOW, NOW.minusSeconds(1)))
        .hasMessageContaining("has passed");
  }

  @Test
  void eachRunGetsItsOwnKeyAndNoneIsEverShown() throws Exception {
    RunCa first = RunCa.create("r1", List.of("api.github.com"), NOW, END);
    RunCa second = RunCa.create("r2", List.of("api.github.com"), NOW, END);
    assertThat(first.certificate().getPublicKey())
        .isNotEqualTo(second.certificate().getPublicKey());
    assertThat(first.toString()).doesNotContain("PRIVATE").contains("r1");
    assertThat(first.certificatePem()).contains("BEGIN CERTIFICATE").doesNotContain("PRIVATE");
    assertThat(first.issue("api.github.com", NOW).toString()).doesNotContain("PRIVATE");
  }
}
