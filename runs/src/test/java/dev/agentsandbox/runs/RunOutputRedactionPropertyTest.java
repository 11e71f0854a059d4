package dev.agentsandbox.runs;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.policy.run.Redactor;
import dev.agentsandbox.policy.run.StreamRedactor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Redaction holds across every boundary, for random output: lines of every length up to past 48
 * KiB, secrets put where a line is cut (16, 32, 48 KiB in) and anywhere else, {@code \r} progress
 * updates, chunks of any size, standard output and standard error interleaved, and secrets printed
 * half on each stream. The seed is printed; {@code -Dredaction.seed=N} replays a case.
 */
class RunOutputRedactionPropertyTest {
  private static final int CASES = Integer.getInteger("redaction.cases", 40);
  private static final String ALPHABET =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  private static final List<String> FILLER =
      List.of("build", "step", "ok", "lorem", "ipsum", "42", "x", "compiling", "done", "/usr/lib");

  /** Credential shapes put into the output, each with the part that must never be shown. */
  private static final List<String[]> SHAPES =
      List.of(
          new String[] {"ghp_0123456789abcdefghijklmnopqrstuvwxyz", "0123456789abcdefghijklmnopq"},
          new String[] {
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
                + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "dozjgNryP4J3jVmNHl0w5N"
          },
          new String[] {"Authorization: Bearer abcdefghijklmnop", "abcdefghijklmnop"},
          new String[] {"AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"},
          new String[] {"db_password=hunter2hunter2", "hunter2hunter2"},
          new String[] {"sk-ant-abcdefghijklmnopqrstuvwx", "abcdefghijklmnopqrstuvwx"});

  @Test
  void noSecretSurvivesAnyCutChunkOrInterleavingAndThePiecesJoinToTheWholeLinesRedacted() {
    long seed = Long.getLong("redaction.seed", System.nanoTime());
    System.out.println("RunOutputRedactionPropertyTest seed=" + seed);
    Random random = new Random(seed);
    for (int n = 0; n < CASES; n++) {
      String as = "seed " + seed + ", case " + n;
      List<String> secrets = List.of(token(random, 12 + random.nextInt(50)), token(random, 30));
      Redactor redactor = new Redactor(secrets);
      String out = stream(random, secrets);
      String err = stream(random, secrets);
      // A secret printed half on each stream, each half left open at the end.
      String split = secrets.get(1);
      out += " " + split.substring(0, 15);
      err += (err.endsWith("\n") ? "" : "\n") + split.substring(15);

      RunOutput output = new RunOutput(redactor, 1 << 24);
      feed(random, output, out.getBytes(UTF_8), err.getBytes(UTF_8));
      output.close();

      List<RunOutput.Line> lines = readAll(output);
      StringBuilder shownOut = new StringBuilder();
      StringBuilder shownErr = new StringBuilder();
      RunOutput.PlainText plain = new RunOutput.PlainText();
      StringBuilder joined = new StringBuilder();
      for (RunOutput.Line line : lines) {
        (line.stderr() ? shownErr : shownOut).append(line.text());
        joined.append(plain.next(line));
      }
      for (String view : List.of(output.tail(), joined.toString())) {
        for (String secret : secrets) {
          assertThat(view.contains(secret)).as(as + ": an env value is shown").isFalse();
        }
        for (String[] shape : SHAPES) {
          assertThat(view.contains(shape[1])).as(as + ": " + shape[0] + " is shown").isFalse();
        }
      }
      assertSame(as + ", stdout", shownOut.toString(), wholeLinesRedacted(redactor, out));
      assertSame(as + ", stderr", shownErr.toString(), wholeLinesRedacted(redactor, err));
    }
  }

  /** Lines of random length, a few past one, two and three cuts, with secrets in them. */
  private static String stream(Random random, List<String> secrets) {
    StringBuilder text = new StringBuilder();
    int lines = 1 + random.nextInt(4);
    for (int l = 0; l < lines; l++) {
      int length =
          switch (random.nextInt(4)) {
            case 0 -> random.nextInt(200);
            case 1 -> StreamRedactor.MAX_LINE - 100 + random.nextInt(200);
            default -> random.nextInt(52 * 1024);
          };
      int lineStart = text.length();
      java.util.Set<Integer> straddled = new java.util.HashSet<>();
      while (text.length() - lineStart < length) {
        int at = text.length() - lineStart;
        int cut = (at / StreamRedactor.MAX_LINE + 1) * StreamRedactor.MAX_LINE;
        int before = cut - at;
        if (before > 1 && before < 90 && straddled.add(cut)) {
          // Across the cut a naive line splitter makes: k of its characters before it.
          String secret = secret(random, secrets);
          int k = 1 + random.nextInt(Math.min(secret.length() - 1, before - 1));
          text.append(" ".repeat(before - k - 1)).append(' ');
          appendSecret(text, secret);
          continue;
        }
        int choice = random.nextInt(40);
        if (choice == 0) {
          text.append(' ');
          appendSecret(text, secret(random, secrets));
        } else if (choice == 1) {
          text.append('\r').append(random.nextInt(100)).append("% ");
        } else {
          text.append(FILLER.get(random.nextInt(FILLER.size()))).append(' ');
        }
      }
      text.append('\n');
    }
    if (random.nextBoolean()) {
      text.setLength(text.length() - 1);
    }
    return text.toString();
  }

  /**
   * Appends a secret and a space; a header's value runs to the end of its line or to a {@code \r},
   * so a {@code \r} ends a header.
   */
  private static void appendSecret(StringBuilder text, String secret) {
    text.append(secret).append(secret.startsWith("Authorization") ? '\r' : ' ');
  }

  private static String secret(Random random, List<String> secrets) {
    return random.nextBoolean()
        ? secrets.get(random.nextInt(secrets.size()))
        : SHAPES.get(random.nextInt(SHAPES.size()))[0];
  }

  private static String token(Random random, int length) {
    StringBuilder token = new StringBuilder("SECRET-");
    for (int i = 0; i < length; i++) {
      token.append(ALPHABET.charAt(random.nextInt(ALPHABET.length())));
    }
    return token.toString();
  }

  /** Both streams in chunks of random sizes, the two interleaved at random. */
  private static void feed(Random random, RunOutput output, byte[] out, byte[] err) {
    int o = 0;
    int e = 0;
    while (o < out.length || e < err.length) {
      boolean toOut = e >= err.length || (o < out.length && random.nextBoolean());
      int size = random.nextBoolean() ? 1 + random.nextInt(64) : 1 + random.nextInt(24 * 1024);
      if (toOut) {
        int end = Math.min(out.length, o + size);
        output.append(Arrays.copyOfRange(out, o, end));
        o = end;
      } else {
        int end = Math.min(err.length, e + size);
        output.appendError(Arrays.copyOfRange(err, e, end));
        e = end;
      }
    }
  }

  private static List<RunOutput.Line> readAll(RunOutput output) {
    try {
      return output.read(0, 0).entries();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  /** What each line of the stream redacted whole gives. */
  private static String wholeLinesRedacted(Redactor redactor, String stream) {
    List<String> lines = new ArrayList<>(Arrays.asList(stream.split("\n", -1)));
    StringBuilder expected = new StringBuilder();
    for (int i = 0; i < lines.size(); i++) {
      boolean last = i == lines.size() - 1;
      if (last && lines.get(i).isEmpty()) {
        break;
      }
      expected.append(redactor.redact(lines.get(i))).append(last ? "" : "\n");
    }
    return expected.toString();
  }

  private static void assertSame(String as, String actual, String expected) {
    int at = 0;
    while (at < actual.length()
        && at < expected.length()
        && actual.charAt(at) == expected.charAt(at)) {
      at++;
    }
    if (at == actual.length() && at == expected.length()) {
      return;
    }
    int from = Math.max(0, at - 60);
    throw new AssertionError(
        as
            + ": the pieces differ from the whole lines redacted at "
            + at
            + ": shown ..."
            + actual.substring(from, Math.min(actual.length(), at + 60))
            + "... expected ..."
            + expected.substring(from, Math.min(expected.length(), at + 60))
            + "...");
  }
}
