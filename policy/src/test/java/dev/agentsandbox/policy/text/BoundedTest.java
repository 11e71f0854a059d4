package dev.agentsandbox.policy.text;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.policy.text.Bounded.Escape;
import java.nio.charset.StandardCharsets;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Each row is untrusted text as a caller quotes it: where it is cut, what the cut ends with, and
 * what is escaped. A change to the cut or to an escape fails a named row.
 */
class BoundedTest {
  private static final String LONG_LINE = "x".repeat(16 * 1024 + 1);
  private static final String EMOJI = "\uD83D\uDE00"; // U+1F600, four bytes in UTF-8

  record Case(String name, String text, int limit, Escape escape, String ellipsis, String shown) {
    @Override
    public String toString() {
      return name;
    }
  }

  static Stream<Case> cases() {
    return Stream.of(
        // null and the limit itself
        new Case("null is empty (CONTROL)", null, 10, Escape.CONTROL, "...", ""),
        new Case("null is empty (NONE)", null, 10, Escape.NONE, "...", ""),
        new Case("null is empty (PRINTABLE_ASCII)", null, 10, Escape.PRINTABLE_ASCII, "...", ""),
        new Case("null is empty (NAME)", null, 10, Escape.NAME, "...", ""),
        new Case("null is empty (ONE_LINE)", null, 10, Escape.ONE_LINE, "...", ""),
        new Case("short text whole", "abc", 10, Escape.CONTROL, "...", "abc"),
        new Case("exactly the limit: no ellipsis", "abcde", 5, Escape.CONTROL, "...", "abcde"),
        new Case("one over the limit: cut", "abcdef", 5, Escape.CONTROL, "...", "abcde..."),
        new Case("limit 0 keeps nothing", "abc", 0, Escape.NONE, "...", "..."),
        new Case(
            "no ellipsis when the caller names none",
            "abcdef",
            5,
            Escape.PRINTABLE_ASCII,
            "",
            "abcde"),
        new Case("the caller's ellipsis", "abcdef", 5, Escape.NONE, "\u2026", "abcde\u2026"),
        // control characters
        new Case("ESC as ? (CONTROL)", "a\u001b[31mb", 20, Escape.CONTROL, "...", "a?[31mb"),
        new Case(
            "CR and LF as ? (CONTROL): no forged line",
            "ok\r\nFAKE line",
            20,
            Escape.CONTROL,
            "...",
            "ok??FAKE line"),
        new Case(
            "NUL, DEL and C1 CSI as ? (CONTROL)",
            "a\u0000b\u007fc\u009bd",
            20,
            Escape.CONTROL,
            "...",
            "a?b?c?d"),
        new Case(
            "non-ASCII letters kept (CONTROL)",
            "caf\u00e9 " + EMOJI,
            20,
            Escape.CONTROL,
            "...",
            "caf\u00e9 " + EMOJI),
        new Case(
            "an unpaired surrogate as ? (CONTROL)", "a\uD800b", 20, Escape.CONTROL, "...", "a?b"),
        new Case(
            "controls kept (NONE: for JSON values only)",
            "a\u001bb",
            20,
            Escape.NONE,
            "...",
            "a\u001bb"),
        new Case(
            "ESC and non-ASCII as ? (PRINTABLE_ASCII)",
            "a\u001bb\u00e9" + EMOJI + " c",
            20,
            Escape.PRINTABLE_ASCII,
            "...",
            "a?b?? c"),
        new Case(
            "space as ? too (VISIBLE_ASCII)", "a b\tc", 20, Escape.VISIBLE_ASCII, "...", "a?b?c"),
        new Case(
            "ESC and RLO written as code points (NAME)",
            "a\u001bb\u202etxt.exe",
            40,
            Escape.NAME,
            "...",
            "a<U+001B>b<U+202E>txt.exe"),
        new Case(
            "limit counts the name's characters, not its escapes (NAME)",
            "\u001b\u001b\u001bxyz",
            4,
            Escape.NAME,
            "...",
            "<U+001B><U+001B><U+001B>x..."),
        new Case(
            "ESC, CR and RLO written as code points, the limit counting text (TEXT)",
            "a\u001bb\r\u202etxt.exe-and-more",
            10,
            Escape.TEXT,
            "\u2026",
            "a<U+001B>b<U+000D><U+202E>txt.e\u2026"),
        new Case(
            "a four-byte character at the limit is not split (TEXT)",
            "abc" + EMOJI + "d",
            4,
            Escape.TEXT,
            "...",
            "abc..."),
        new Case(
            "whitespace runs one space, ends stripped (ONE_LINE)",
            "  HTTP 500\r\n\tsomething\n\n broke  ",
            40,
            Escape.ONE_LINE,
            "...",
            "HTTP 500 something broke"),
        new Case(
            "other controls as ? (ONE_LINE)",
            "a\u001b]52;c;b\u0007",
            40,
            Escape.ONE_LINE,
            "...",
            "a?]52;c;b?"),
        new Case(
            "cut after the line is made (ONE_LINE)",
            "a\n\n\n\nbcdef",
            4,
            Escape.ONE_LINE,
            "...",
            "a bc..."),
        // a 16 KiB+ line
        new Case(
            "a 16 KiB+ line is cut (CONTROL)",
            LONG_LINE,
            120,
            Escape.CONTROL,
            "...",
            "x".repeat(120) + "..."),
        new Case(
            "a 16 KiB+ line is cut (NONE)",
            LONG_LINE,
            600,
            Escape.NONE,
            "...",
            "x".repeat(600) + "..."),
        new Case(
            "a 16 KiB+ line is cut (PRINTABLE_ASCII)",
            LONG_LINE,
            80,
            Escape.PRINTABLE_ASCII,
            "...",
            "x".repeat(80) + "..."),
        new Case(
            "a 16 KiB+ line of spaces and words is one line (ONE_LINE)",
            "w \n".repeat(6000),
            300,
            Escape.ONE_LINE,
            "...",
            "w ".repeat(150) + "..."),
        new Case(
            "an escape past the cut of a 16 KiB+ line is not shown (CONTROL)",
            LONG_LINE + "\u001b",
            10,
            Escape.CONTROL,
            "...",
            "xxxxxxxxxx..."),
        // multi-byte UTF-8 at the cut
        new Case(
            "a four-byte character at the limit is not split: cut before it",
            "abcd" + EMOJI + "ef",
            5,
            Escape.CONTROL,
            "...",
            "abcd..."),
        new Case(
            "a four-byte character ending at the limit is kept whole",
            "abc" + EMOJI + "ef",
            5,
            Escape.CONTROL,
            "...",
            "abc" + EMOJI + "..."),
        new Case(
            "a four-byte character at the limit is not split (NONE)",
            "abcd" + EMOJI,
            5,
            Escape.NONE,
            "...",
            "abcd..."),
        new Case(
            "a four-byte character at the limit is not split (NAME)",
            "abcd" + EMOJI,
            5,
            Escape.NAME,
            "...",
            "abcd..."),
        new Case(
            "a two-byte character at the limit is kept (one UTF-16 unit)",
            "abcd\u00e9f",
            5,
            Escape.CONTROL,
            "...",
            "abcd\u00e9..."),
        new Case(
            "a four-byte character at the limit is one ? (PRINTABLE_ASCII)",
            "abc" + EMOJI + "ef",
            5,
            Escape.PRINTABLE_ASCII,
            "...",
            "abc?..."));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void quotesUntrustedText(Case c) {
    String shown = Bounded.text(c.text(), c.limit(), c.escape(), c.ellipsis());
    assertThat(shown).as(c.name()).isEqualTo(c.shown());
    // Whatever the row: valid UTF-16 (so valid UTF-8 once encoded), and bounded.
    assertThat(new String(shown.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8))
        .as("round trip through UTF-8")
        .isEqualTo(shown);
    if (c.escape() != Escape.NAME && c.escape() != Escape.TEXT) {
      assertThat(shown.length()).isLessThanOrEqualTo(c.limit() + c.ellipsis().length());
    }
    if (c.escape() != Escape.NONE) {
      assertThat(shown.codePoints().filter(Character::isISOControl)).as("no control").isEmpty();
    }
  }

  @Test
  void theDefaultEllipsisIsThreeDots() {
    assertThat(Bounded.text("abcdef", 3, Escape.CONTROL)).isEqualTo("abc...");
  }

  @Test
  void withinShowsANameAtTheLimitWholeAndCutsOneOverToTheLimit() {
    String eighty = "n".repeat(80);
    assertThat(Bounded.within(eighty, 80, Escape.NAME)).isEqualTo(eighty);
    assertThat(Bounded.within(eighty + "n", 80, Escape.NAME)).isEqualTo("n".repeat(77) + "...");
    assertThat(Bounded.within(LONG_LINE + "\u202e", 80, Escape.NAME))
        .isEqualTo("x".repeat(77) + "...");
    assertThat(Bounded.within("a\u202eb", 80, Escape.NAME)).isEqualTo("a<U+202E>b");
    assertThat(Bounded.within("x".repeat(74) + EMOJI + "yyyy", 78, Escape.NAME))
        .as("the pair is not split at limit - 3")
        .isEqualTo("x".repeat(74) + "...");
    assertThat(Bounded.within(null, 80, Escape.NAME)).isEmpty();
    assertThat(Bounded.within("  a \n b ", 80, Escape.ONE_LINE)).isEqualTo("a b");
  }

  @Test
  void aNegativeLimitOrOneWithoutRoomForTheEllipsisIsRefused() {
    assertThatThrownBy(() -> Bounded.text("a", -1, Escape.NONE))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Bounded.within("a", 2, Escape.NONE))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
