package dev.agentsandbox.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** A request's host name, canonicalized with IDNA: what the JDK's IDNA throws is a refusal. */
class HostNameTargetTest {
  @Test
  void aNonAsciiLabelOverPunycodesLimitIsRefusedNotThrown() {
    // Under the length cap (4 × 253 characters), but one label of 1,008 code units: the JDK's
    // Punycode throws a bare RuntimeException ("input too long") for it (found by fuzzing).
    String label = "é".repeat(1008);

    assertThatThrownBy(() -> HostName.canonicalTargetHost(label))
        .isInstanceOf(InvalidHostException.class)
        .hasMessageContaining("not valid IDNA");
  }

  @Test
  void aShortNonAsciiNameIsConvertedToPunycode() {
    assertThat(HostName.canonicalTargetHost("bücher.example")).isEqualTo("xn--bcher-kva.example");
  }
}
