package dev.agentsandbox.runs;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.policy.run.Redactor;
import java.util.List;
import org.junit.jupiter.api.Test;

class RunOutputTest {
  private static RunOutput output(int tailBytes, String... envValues) {
    return new RunOutput(new Redactor(List.of(envValues)), tailBytes);
  }

  @Test
  void aSecretSplitAcrossChunksIsStillRedacted() {
    RunOutput out = output(4096, "hunter2-secret-value");
    out.append("token: hunter2-se".getBytes(UTF_8));
    out.append("cret-value done\n".getBytes(UTF_8));
    out.close();
    assertThat(out.tail()).isEqualTo("token: [REDACTED] done\n").doesNotContain("hunter2");
  }

  @Test
  void aPrivateKeyBlockSpanningLinesBecomesOneMark() {
    RunOutput out = output(4096);
    out.append(
        ("before\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQUJDREVGR0hJSktMTU5P\n"
                + "-----END OPENSSH PRIVATE KEY-----\nafter\n")
            .getBytes(UTF_8));
    out.close();
    assertThat(out.tail()).isEqualTo("before\n[REDACTED]\nafter\n");
  }

  @Test
  void anUnterminatedPrivateKeyHidesEverythingAfterIt() {
    RunOutput out = output(4096);
    out.append("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B\nmore\n".getBytes(UTF_8));
    out.close();
    assertThat(out.tail()).isEqualTo("[REDACTED]\n");
  }

  @Test
  void theTailKeepsTheNewestLinesWithinItsSize() {
    RunOutput out = output(1024);
    for (int i = 0; i < 500; i++) {
      out.append(("line " + i + "\n").getBytes(UTF_8));
    }
    out.close();
    String tail = out.tail();
    assertThat(tail.getBytes(UTF_8).length).isLessThanOrEqualTo(1024);
    assertThat(tail).endsWith("line 499\n").doesNotContain("line 0\n");
    assertThat(out.totalBytes()).isEqualTo(10 * 7 + 90 * 8 + 400 * 9);
  }

  @Test
  void aSingleLineLongerThanTheTailKeepsItsEnd() {
    RunOutput out = output(1024);
    out.append(("x".repeat(5000) + "END").getBytes(UTF_8));
    out.close();
    assertThat(out.tail()).hasSize(1024).endsWith("END");
  }

  @Test
  void aFinalLineWithoutNewlineIsKept() {
    RunOutput out = output(1024);
    out.append("no newline".getBytes(UTF_8));
    out.close();
    assertThat(out.tail()).isEqualTo("no newline");
  }

  @Test
  void followersReadInOrderAndLearnWhatTheyMissed() throws InterruptedException {
    RunOutput out = output(1024);
    out.append("a\nb\n".getBytes(UTF_8));
    RunOutput.Chunk first = out.read(0, 0);
    assertThat(first.lines()).containsExactly("a\n", "b\n");
    assertThat(first.finished()).isFalse();
    for (int i = 0; i < 600; i++) {
      out.append(("line " + i + "\n").getBytes(UTF_8));
    }
    out.close();
    RunOutput.Chunk second = out.read(first.nextSeq(), 0);
    assertThat(second.skippedLines()).isPositive();
    assertThat(second.lines()).last().isEqualTo("line 599\n");
    assertThat(second.finished()).isTrue();
  }

  @Test
  void aFollowerWaitsForNewOutputAndWakesOnClose() throws Exception {
    RunOutput out = output(1024);
    Thread closer =
        Thread.ofVirtual()
            .start(
                () -> {
                  try {
                    Thread.sleep(100);
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                  out.append("late\n".getBytes(UTF_8));
                  out.close();
                });
    RunOutput.Chunk chunk = out.read(0, 10_000);
    closer.join(10_000);
    assertThat(chunk.lines()).containsExactly("late\n");
  }

  @Test
  void standardErrorStaysApartAndAPartialLineOnOneStreamDoesNotSwallowTheOther() throws Exception {
    RunOutput out = output(4096, "s3cret-value");
    out.append("progress: 5".getBytes(UTF_8));
    out.appendError("warning: token s3cret-value\n".getBytes(UTF_8));
    out.append("0%\n".getBytes(UTF_8));
    out.appendError("no newline at the end".getBytes(UTF_8));
    out.close();
    RunOutput.Chunk chunk = out.read(0, 0);
    assertThat(chunk.entries())
        .containsExactly(
            new RunOutput.Line("warning: token [REDACTED]\n", true),
            new RunOutput.Line("progress: 50%\n", false),
            new RunOutput.Line("no newline at the end", true));
    assertThat(out.tail())
        .isEqualTo("warning: token [REDACTED]\nprogress: 50%\nno newline at the end");
  }

  @Test
  void aPrivateKeyOnStandardErrorIsRedactedThere() {
    RunOutput out = output(4096);
    out.appendError("-----BEGIN PRIVATE KEY-----\n".getBytes(UTF_8));
    out.append("ordinary line\n".getBytes(UTF_8));
    out.appendError("MIIEvQIBADANBgkqhkiG9w0B\n-----END PRIVATE KEY-----\nafter\n".getBytes(UTF_8));
    out.close();
    assertThat(out.tail()).isEqualTo("[REDACTED]\nordinary line\nafter\n");
  }

  @Test
  void outputAfterCloseIsIgnored() {
    RunOutput out = output(1024);
    out.close();
    out.append("too late\n".getBytes(UTF_8));
    assertThat(out.tail()).isEmpty();
  }

  @Test
  void theIssuesCaseASecretAfter16370CharactersStaysRedactedInTheTailAndForFollowers()
      throws InterruptedException {
    String key = "SECRETVALUE-0123456789abcdefgh";
    RunOutput out = output(64 * 1024, key);
    byte[] raw = (key + "\n" + "x".repeat(16370) + key + "\n").getBytes(UTF_8);
    for (int at = 0; at < raw.length; at += 4096) {
      out.append(java.util.Arrays.copyOfRange(raw, at, Math.min(raw.length, at + 4096)));
    }
    out.close();
    String expected = "[REDACTED]\n" + "x".repeat(16370) + "[REDACTED]\n";
    assertThat(out.tail()).isEqualTo(expected);
    assertThat(String.join("", out.read(0, 0).lines())).isEqualTo(expected);
  }

  @Test
  void aSecretPrintedHalfOnEachStreamIsNotJoinedAgainInTheTail() {
    RunOutput out = output(4096, "SECRETVALUE-0123456789abcdefgh");
    out.append("key: SECRETVALUE-01234".getBytes(UTF_8));
    out.appendError("56789abcdefgh".getBytes(UTF_8));
    out.close();
    assertThat(out.tail())
        .isEqualTo("key: SECRETVALUE-01234\n56789abcdefgh")
        .doesNotContain("SECRETVALUE-0123456789abcdefgh");
  }
}
