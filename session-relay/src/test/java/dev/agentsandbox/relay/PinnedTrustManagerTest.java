package dev.agentsandbox.relay;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** What a pinned end accepts: the one certificate, alone, while valid; a table of the rest. */
class PinnedTrustManagerTest {
  private static final Instant NOW = Instant.parse("2030-01-01T12:00:00Z");
  private static final RelayIdentity PINNED =
      RelayIdentity.generate(RelayIdentity.Role.CONTROL_PLANE, "r1", NOW, NOW.plusSeconds(3600));
  private static final PinnedTrustManager MANAGER =
      new PinnedTrustManager(PINNED.pin(), Clock.fixed(NOW, ZoneOffset.UTC));

  @Test
  void thePinnedCertificateAloneIsAccepted() {
    assertThatCode(
            () -> MANAGER.checkClientTrusted(new X509Certificate[] {PINNED.certificate()}, "EC"))
        .doesNotThrowAnyException();
    assertThatCode(
            () -> MANAGER.checkServerTrusted(new X509Certificate[] {PINNED.certificate()}, "EC"))
        .doesNotThrowAnyException();
  }

  static Stream<Arguments> refused() throws Exception {
    RelayIdentity other =
        RelayIdentity.generate(RelayIdentity.Role.CONTROL_PLANE, "r1", NOW, NOW.plusSeconds(3600));
    TestCa ca = new TestCa("test CA");
    TestCa.Leaf leaf = ca.issue("agent-sandbox control plane r1", NOW);
    RelayIdentity expired =
        RelayIdentity.generate(
            RelayIdentity.Role.CONTROL_PLANE,
            "r1",
            NOW.minus(Duration.ofDays(2)),
            NOW.minusSeconds(1));
    RelayIdentity notYet =
        RelayIdentity.generate(
            RelayIdentity.Role.CONTROL_PLANE,
            "r1",
            NOW.plus(Duration.ofDays(1)),
            NOW.plus(Duration.ofDays(2)));
    CertificatePin pinned = PINNED.pin();
    return Stream.of(
        Arguments.of("no chain", null, pinned, "the peer presented no certificate"),
        Arguments.of(
            "an empty chain", new X509Certificate[0], pinned, "the peer presented no certificate"),
        Arguments.of(
            "another key's certificate",
            new X509Certificate[] {other.certificate()},
            pinned,
            "is not the pinned"),
        Arguments.of(
            "a CA-signed certificate for the same name",
            leaf.chain(),
            pinned,
            "presented 2 certificates"),
        Arguments.of(
            "the pinned certificate with another behind it",
            new X509Certificate[] {PINNED.certificate(), ca.certificate},
            pinned,
            "presented 2 certificates"),
        Arguments.of(
            "the CA's own certificate",
            new X509Certificate[] {ca.certificate},
            pinned,
            "is not the pinned"),
        // Pinned themselves, so that only their validity is at stake.
        Arguments.of(
            "the pinned certificate past its end",
            new X509Certificate[] {expired.certificate()},
            expired.pin(),
            "not valid now"),
        Arguments.of(
            "the pinned certificate before its start",
            new X509Certificate[] {notYet.certificate()},
            notYet.pin(),
            "not valid now"));
  }

  @ParameterizedTest(name = "{0} is refused")
  @MethodSource("refused")
  void everythingElseIsRefused(
      String name, X509Certificate[] chain, CertificatePin pin, String why) {
    PinnedTrustManager manager = new PinnedTrustManager(pin, Clock.fixed(NOW, ZoneOffset.UTC));
    assertThatThrownBy(() -> manager.checkClientTrusted(chain, "EC"))
        .isInstanceOf(UnpinnedCertificateException.class)
        .hasMessageContaining(why);
    assertThatThrownBy(() -> manager.checkServerTrusted(chain, "EC"))
        .isInstanceOf(UnpinnedCertificateException.class)
        .hasMessageContaining(why);
  }
}
