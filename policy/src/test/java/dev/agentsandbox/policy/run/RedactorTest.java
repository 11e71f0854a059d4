package dev.agentsandbox.policy.run;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Each row is a secret that must not survive into an output tail or an audit row. */
class RedactorTest {
  private static final Redactor NO_ENV = new Redactor(List.of());

  static Stream<Arguments> shapes() {
    return Stream.of(
        Arguments.of("bearer header", "Authorization: Bearer abcdefghijklmnop", "abcdefghijklmnop"),
        Arguments.of("bare bearer token", "token is Bearer abc.def-ghi_jkl", "abc.def-ghi_jkl"),
        Arguments.of("AWS access key id", "key AKIAIOSFODNN7EXAMPLE here", "AKIAIOSFODNN7EXAMPLE"),
        Arguments.of(
            "GitHub token",
            "ghp_0123456789abcdefghijklmnopqrstuvwxyz",
            "0123456789abcdefghijklmnopqrstuvwxyz"),
        Arguments.of("Slack token", "xoxb-123456789012-abcdefghij", "123456789012-abcdefghij"),
        Arguments.of("OpenAI-style key", "sk-abcdefghijklmnopqrstuvwx", "abcdefghijklmnopqrstuvwx"),
        Arguments.of(
            "our own API token", "asb_AAAAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAAAA"),
        Arguments.of(
            "JWT",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
        Arguments.of(
            "Vault service token",
            "vault: using hvs.CAESIJlSx3Tf7W8Q0qL9v2nB1aXkYzPqRtU4",
            "CAESIJlSx3Tf7W8Q0qL9v2nB1aXkYzPqRtU4"),
        Arguments.of(
            "Vault batch token",
            "token hvb.AAAAAQKx9mN2pQ7rT1vW3yZ5bC8dF0gH",
            "AAAAAQKx9mN2pQ7rT1vW3yZ5bC8dF0gH"),
        Arguments.of("password assignment", "db_password=hunter2hunter2", "hunter2hunter2"),
        Arguments.of("quoted api key", "api_key: \"abc 123 secret\"", "abc 123 secret"),
        Arguments.of(
            "PEM private key",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
            "MIIEpAIBAAKCAQEA"),
        Arguments.of(
            "PEM key cut off by the tail",
            "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq",
            "MIIEvQ"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource
  void shapes(String name, String text, String secret) {
    String redacted = NO_ENV.redact(text);
    assertThat(redacted).doesNotContain(secret).contains(Redactor.MARK);
  }

  @Test
  void envValuesAreRedactedWhereverTheyAppear() {
    Redactor redactor = new Redactor(List.of("s3cr3t-value", "s3cr3t-value-longer"));
    assertThat(redactor.redact("a s3cr3t-value-longer b s3cr3t-value c"))
        .isEqualTo("a [REDACTED] b [REDACTED] c");
  }

  @Test
  void shortEnvValuesAreLeftAloneSoOutputStaysReadable() {
    assertThat(new Redactor(List.of("1", "yes")).redact("exit 1: yes")).isEqualTo("exit 1: yes");
  }

  @Test
  void assignmentKeepsTheNameSoTheReaderKnowsWhatWasThere() {
    assertThat(NO_ENV.redact("GITHUB_TOKEN=abcdef123456")).isEqualTo("GITHUB_TOKEN=[REDACTED]");
  }

  @Test
  void ordinaryOutputIsUntouched() {
    String text = "compiling 12 files\nok: 3 passed, 0 failed\nhttps://api.vendor.com/v1\n";
    assertThat(NO_ENV.redact(text)).isEqualTo(text);
  }
}
