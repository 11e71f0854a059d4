package dev.agentsandbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The relay's first log line, read as the control plane reads it: exact, or nothing. */
class ReadyLineTest {
  private static final String HEX = "0123456789abcdef".repeat(4);

  @Test
  void aReadyLineNamesItsPin() {
    String log = ReadyLine.format(new CertificatePin(HEX)) + "\nagent-sandbox-relay listening\n";
    assertThat(ReadyLine.parse(log)).contains(new CertificatePin(HEX));
    assertThat(ReadyLine.parse(ReadyLine.format(new CertificatePin(HEX)) + "\r\n"))
        .contains(new CertificatePin(HEX));
  }

  static Stream<Arguments> notReady() {
    return Stream.of(
        Arguments.of("nothing yet", ""),
        Arguments.of("no log at all", null),
        Arguments.of("the line not finished", ReadyLine.PREFIX + HEX),
        Arguments.of(
            "upper-case hex", ReadyLine.PREFIX + HEX.toUpperCase(java.util.Locale.ROOT) + "\n"),
        Arguments.of("a short pin", ReadyLine.PREFIX + HEX.substring(1) + "\n"),
        Arguments.of("text after the pin", ReadyLine.PREFIX + HEX + " extra\n"),
        Arguments.of("another version", "agent-sandbox-relay ready v2 sha256=" + HEX + "\n"),
        Arguments.of(
            "a ready line that is not the first",
            "something else\n" + ReadyLine.PREFIX + HEX + "\n"),
        Arguments.of("a failure line", RelayFailure.PREFIX + "runner-unreachable\n"));
  }

  @ParameterizedTest(name = "{0}: not ready")
  @MethodSource("notReady")
  void anythingElseIsNotReady(String name, String log) {
    assertThat(ReadyLine.parse(log)).isEmpty();
  }

  @Test
  void aFailureLineNamesItsReason() {
    assertThat(RelayFailure.parse(RelayFailure.PREFIX + "runner-unreachable\nmore\n"))
        .contains(RelayFailure.RUNNER_UNREACHABLE);
    assertThat(RelayFailure.parse(RelayFailure.PREFIX + "something-else\n")).isEmpty();
    assertThat(RelayFailure.parse(ReadyLine.PREFIX + HEX + "\n")).isEmpty();
  }

  @Test
  void aPinIsSixtyFourLowerCaseHexDigits() {
    assertThatThrownBy(() -> new CertificatePin("00"))
        .hasMessage("a certificate pin is 64 lower-case hex digits (a SHA-256), not \"00\"");
    assertThatThrownBy(() -> new CertificatePin(HEX.toUpperCase(java.util.Locale.ROOT)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(new CertificatePin(HEX)).hasToString("sha256:" + HEX);
  }
}
