package dev.agentsandbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The relay's command line, as the pod spec gives it, and what it refuses. */
class RelayOptionsTest {
  private static final String PIN = "ab".repeat(32);

  private static List<String> good() {
    return new ArrayList<>(
        List.of(
            "--listen-address", "10.42.0.7",
            "--listen-port", "7443",
            "--runner-port", "7444",
            "--client-sha256", PIN,
            "--run-id", "r7k2",
            "--expires-at", "1893456000"));
  }

  @Test
  void theSidecarsArgumentsAreRead() {
    RelayOptions options = RelayOptions.parse(good().toArray(String[]::new));
    assertThat(options.listenAddress()).isEqualTo("10.42.0.7");
    assertThat(options.listenPort()).isEqualTo(7443);
    assertThat(options.runnerPort()).isEqualTo(7444);
    assertThat(options.clientPin()).isEqualTo(new CertificatePin(PIN));
    assertThat(options.expiresAt()).isEqualTo(Instant.ofEpochSecond(1893456000));
    assertThat(options.runnerTimeout()).isEqualTo(Duration.ofSeconds(120));
    assertThat(options.handshakeTimeout()).isEqualTo(Duration.ofSeconds(10));
  }

  static Stream<Arguments> refused() {
    return Stream.of(
        Arguments.of(
            "a host name to resolve", "--listen-address", "relay.example", "must be an IP address"),
        Arguments.of("a port out of range", "--listen-port", "70000", "out of range"),
        Arguments.of("the runner's port as the listener's", "--listen-port", "7444", "must differ"),
        Arguments.of("a short pin", "--client-sha256", "abcd", "64 lower-case hex digits"),
        Arguments.of("a run id with a slash", "--run-id", "r/1", "--run-id must be"),
        Arguments.of("a negative expiry", "--expires-at", "-1", "out of range"),
        Arguments.of("an unknown option", "--insecure", "1", "unknown option --insecure"));
  }

  @ParameterizedTest(name = "{0} is refused")
  @MethodSource("refused")
  void badArgumentsAreRefusedNamingTheProblem(
      String name, String option, String value, String message) {
    List<String> args = good();
    int at = args.indexOf(option);
    if (at >= 0) {
      args.set(at + 1, value);
    } else {
      args.addAll(List.of(option, value));
    }
    assertThatThrownBy(() -> RelayOptions.parse(args.toArray(String[]::new)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(message);
  }

  @Test
  void everyOptionIsRequiredOnceAndNeedsAValue() {
    List<String> missing = good().subList(2, good().size());
    assertThatThrownBy(() -> RelayOptions.parse(missing.toArray(String[]::new)))
        .hasMessage("--listen-address is required");
    List<String> twice = good();
    twice.addAll(List.of("--run-id", "other"));
    assertThatThrownBy(() -> RelayOptions.parse(twice.toArray(String[]::new)))
        .hasMessage("--run-id is given twice");
    List<String> dangling = good();
    dangling.add("--runner-timeout-seconds");
    assertThatThrownBy(() -> RelayOptions.parse(dangling.toArray(String[]::new)))
        .hasMessage("--runner-timeout-seconds needs a value");
  }
}
