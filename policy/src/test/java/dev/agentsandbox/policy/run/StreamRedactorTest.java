package dev.agentsandbox.policy.run;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Each row is a secret put where a long line is cut, at every offset from the cut: the pieces must
 * join to exactly what the whole line redacted gives, and no piece, nor their join, may hold the
 * secret.
 */
class StreamRedactorTest {
  private static final String ENV_SECRET = "SECRETVALUE-0123456789abcdefgh";
  private static final Redactor REDACTOR = new Redactor(List.of(ENV_SECRET));

  /** Name, the text put across the cut, and what must never be seen of it. */
  static Stream<Arguments> secretsAtTheCut() {
    return Stream.of(
        Arguments.of("env value", ENV_SECRET, ENV_SECRET),
        Arguments.of("env value after a name", "API_KEY=" + ENV_SECRET, ENV_SECRET),
        Arguments.of(
            "authorization header", "Authorization: Bearer abcdefghijklmnop", "abcdefghijklmnop"),
        Arguments.of("bearer token", " Bearer abc.def-ghi_jklmnop ", "abc.def-ghi_jklmnop"),
        Arguments.of("aws access key id", " AKIAIOSFODNN7EXAMPLE ", "AKIAIOSFODNN7EXAMPLE"),
        Arguments.of(
            "github token",
            " ghp_0123456789abcdefghijklmnopqrstuvwxyz ",
            "0123456789abcdefghijklmnopqrstuvwxyz"),
        Arguments.of("gitlab token", " glpat-0123456789abcdefghijkl ", "0123456789abcdefghijkl"),
        Arguments.of("slack token", " xoxb-123456789012-abcdefghij ", "123456789012-abcdefghij"),
        Arguments.of(
            "openai-style key", " sk-abcdefghijklmnopqrstuvwx ", "abcdefghijklmnopqrstuvwx"),
        Arguments.of(
            "agent sandbox token", " asb_AAAAAAAAAAAAAAAAAAAAAAAA ", "AAAAAAAAAAAAAAAAAAAAAAAA"),
        Arguments.of(
            "jwt",
            " eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
                + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U ",
            "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
        Arguments.of("password assignment", " db_password=hunter2hunter2 ", "hunter2hunter2"),
        Arguments.of("quoted api key", " api_key: \"abc 123 secret\" ", "abc 123 secret"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource
  void secretsAtTheCut(String name, String secret, String hidden) {
    for (int before = 0; before <= secret.length(); before++) {
      // The line reaches MAX_LINE with `before` characters of the secret in it.
      String line =
          "x ".repeat((StreamRedactor.MAX_LINE - before) / 2)
              + "y".repeat((StreamRedactor.MAX_LINE - before) % 2)
              + secret
              + " tail";
      for (int chunk : new int[] {1, 4096, 1 << 20}) {
        String shown = run(REDACTOR, line + "\n", chunk);
        String as = name + " with " + before + " characters before the cut, chunks of " + chunk;
        assertSameText(as, shown, REDACTOR.redact(line) + "\n");
        assertThat(shown.contains(hidden)).as(as + ": the secret is shown").isFalse();
      }
    }
  }

  @Test
  void theIssuesCaseTheSecretAfter16370CharactersIsRedacted() {
    String output = ENV_SECRET + "\n" + "x".repeat(16370) + ENV_SECRET + "\n";
    String shown = run(REDACTOR, output, 1 << 20);
    assertThat(shown.contains("SECRETVALUE")).as("the secret is shown").isFalse();
    assertSameText("the issue's case", shown, "[REDACTED]\n" + "x".repeat(16370) + "[REDACTED]\n");
  }

  @Test
  void secretsAt16And32And48KiBOfOneLineAreAllRedacted() {
    StringBuilder line = new StringBuilder();
    for (int kib : new int[] {16, 32, 48}) {
      line.append("z".repeat(kib * 1024 - 12 - line.length())).append(' ').append(ENV_SECRET);
      line.append(' ');
    }
    line.append(" end");
    String shown = run(REDACTOR, line + "\n", 1000);
    assertThat(shown.contains("SECRETVALUE")).as("the secret is shown").isFalse();
    assertSameText("one long line", shown, REDACTOR.redact(line.toString()) + "\n");
    assertThat(shown.split("\\[REDACTED]", -1)).hasSize(4);
  }

  @Test
  void progressLinesWithCarriageReturnsAreCutSafely() {
    StringBuilder line = new StringBuilder();
    for (int i = 0; line.length() < 40_000; i++) {
      line.append("\r").append(i % 100).append("% token=").append(ENV_SECRET);
    }
    String shown = run(REDACTOR, line + "\n", 333);
    assertThat(shown.contains("SECRETVALUE")).as("the secret is shown").isFalse();
    assertSameText("one long line", shown, REDACTOR.redact(line.toString()) + "\n");
  }

  @Test
  void aLongLineWithoutSecretsPassesThroughUnchanged() {
    StringBuilder line = new StringBuilder();
    for (int i = 0; line.length() < 100_000; i++) {
      line.append("word").append(i).append(i % 7 == 0 ? "\t" : " ");
    }
    String base64ish = "QUJD".repeat(20_000);
    String text = line + "\n" + base64ish + "\n" + "end without newline";
    assertSameText("long lines without secrets", run(REDACTOR, text, 777), text);
  }

  @Test
  void aSecretShapedRunLongerThanTheHoldIsWithheldWithTheRestOfItsLine() {
    String line = "before password=" + "v".repeat(20_000) + " after the value";
    String shown = run(REDACTOR, line + "\nnext line\n", 4096);
    assertSameText("a withheld value", shown, "before [REDACTED]\nnext line\n");
  }

  @Test
  void aPrivateKeyWhoseFirstLineStraddlesACutIsStillHidden() {
    for (int before = 0; before <= 35; before++) {
      String begin = "-----BEGIN RSA PRIVATE KEY-----";
      String line = "x".repeat(StreamRedactor.MAX_LINE - before) + begin;
      String text = line + "\nMIIEpAIBAAKCAQEAsecretbody\n-----END RSA PRIVATE KEY-----\nafter\n";
      String shown = run(REDACTOR, text, 1 << 20);
      // What came before the marker on its line is shown; the marker's line is one mark.
      assertSameText(
          before + " characters of the marker before the cut",
          shown.replace("x", ""),
          "[REDACTED]\nafter\n");
    }
  }

  @Test
  void aPrivateKeysEndStraddlingACutEndsTheBlock() {
    String end = "-----END RSA PRIVATE KEY-----";
    String text =
        "-----BEGIN RSA PRIVATE KEY-----\n"
            + "A".repeat(StreamRedactor.MAX_LINE * 3 - 10)
            + end
            + "\nvisible again\n";
    assertThat(run(REDACTOR, text, 5000)).isEqualTo("[REDACTED]\nvisible again\n");
  }

  @Test
  void aMultiLineEnvValueIsRedactedLineByLine() {
    Redactor redactor = new Redactor(List.of("first-line-of-it\nsecond-line-of-it"));
    String shown = run(redactor, "a first-line-of-it\nsecond-line-of-it b\n", 1 << 20);
    assertThat(shown).isEqualTo("a [REDACTED]\n[REDACTED] b\n");
  }

  @Test
  void aMultiByteCharacterAtACutStaysWhole() {
    String line = "x".repeat(StreamRedactor.MAX_LINE - 1) + "é€😀 after";
    assertSameText("multi-byte characters", run(REDACTOR, line + "\n", 1), line + "\n");
  }

  @Test
  void completeUpToKeepsAnUnfinishedCharacterPending() {
    byte[] euro = "€".getBytes(UTF_8);
    assertThat(StreamRedactor.completeUpTo(new byte[] {'a', euro[0], euro[1]})).isEqualTo(1);
    assertThat(StreamRedactor.completeUpTo(new byte[] {'a', euro[0], euro[1], euro[2]}))
        .isEqualTo(4);
    assertThat(StreamRedactor.completeUpTo(new byte[] {'a'})).isEqualTo(1);
    assertThat(StreamRedactor.completeUpTo(new byte[] {})).isZero();
  }

  /**
   * Equal texts, or a failure naming where they first differ (these texts are tens of KiB: the
   * whole of them would bury the difference).
   */
  static void assertSameText(String as, String actual, String expected) {
    int at = 0;
    while (at < actual.length()
        && at < expected.length()
        && actual.charAt(at) == expected.charAt(at)) {
      at++;
    }
    if (at == actual.length() && at == expected.length()) {
      return;
    }
    int from = Math.max(0, at - 40);
    throw new AssertionError(
        as
            + ": the texts differ at "
            + at
            + " (lengths "
            + actual.length()
            + " and "
            + expected.length()
            + "): shown ..."
            + actual.substring(from, Math.min(actual.length(), at + 40))
            + "... expected ..."
            + expected.substring(from, Math.min(expected.length(), at + 40))
            + "...");
  }

  /** The stream's pieces joined, written in chunks of {@code chunk} bytes. */
  static String run(Redactor redactor, String text, int chunk) {
    StreamRedactor stream = new StreamRedactor(redactor);
    List<String> pieces = new ArrayList<>();
    byte[] bytes = text.getBytes(UTF_8);
    for (int at = 0; at < bytes.length; at += chunk) {
      byte[] part = java.util.Arrays.copyOfRange(bytes, at, Math.min(bytes.length, at + chunk));
      stream.write(part, pieces::add);
    }
    stream.close(pieces::add);
    for (String piece : pieces) {
      assertThat(piece.indexOf('\n'))
          .as("a newline only ends a piece")
          .isIn(-1, piece.length() - 1);
    }
    return String.join("", pieces);
  }
}
