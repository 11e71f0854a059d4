package dev.agentsandbox.policy.text;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.policy.text.ShownText.Kind;
import dev.agentsandbox.policy.text.ShownText.Rule;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Each row is a character that could make a shown name or reason lie about itself. */
class ShownTextTest {
  @ParameterizedTest(name = "{0}: U+{1} is {2}")
  @CsvSource({
    "ESC starts every terminal escape (OSC 52 sets the clipboard), 1B, CONTROL",
    "NUL, 0, CONTROL",
    "carriage return overwrites the line, D, CONTROL",
    "line feed forges a second line, A, CONTROL",
    "tab, 9, CONTROL",
    "DEL, 7F, CONTROL",
    "C1 CSI: an 8-bit terminal escape, 9B, CONTROL",
    "C1 OSC, 9D, CONTROL",
    "right-to-left override: exe.txt shown as txt.exe, 202E, BIDI",
    "left-to-right override, 202D, BIDI",
    "right-to-left embedding, 202B, BIDI",
    "pop directional formatting, 202C, BIDI",
    "right-to-left isolate, 2067, BIDI",
    "first strong isolate, 2068, BIDI",
    "pop directional isolate, 2069, BIDI",
    "left-to-right mark, 200E, BIDI",
    "right-to-left mark, 200F, BIDI",
    "Arabic letter mark, 61C, BIDI",
    "zero width space: two names that look the same, 200B, INVISIBLE",
    "zero width non-joiner, 200C, INVISIBLE",
    "zero width joiner, 200D, INVISIBLE",
    "word joiner, 2060, INVISIBLE",
    "byte order mark / zero width no-break space, FEFF, INVISIBLE",
    "soft hyphen, AD, INVISIBLE",
    "Mongolian vowel separator, 180E, INVISIBLE",
    "tag character, E0041, INVISIBLE",
    "Hangul filler, 3164, INVISIBLE",
    "Hangul choseong filler, 115F, INVISIBLE",
    "halfwidth Hangul filler, FFA0, INVISIBLE",
    "combining grapheme joiner, 34F, INVISIBLE",
    "braille pattern blank, 2800, INVISIBLE",
    "line separator, 2028, LINE_SEPARATOR",
    "paragraph separator, 2029, LINE_SEPARATOR",
    "no-break space looks like a space, A0, SPACE",
    "em space, 2003, SPACE",
    "ideographic space, 3000, SPACE",
    "lone high surrogate, D800, BROKEN_UTF16",
    "private use, E000, PRIVATE_USE",
    "unassigned, 378, UNASSIGNED",
    "noncharacter, FFFF, UNASSIGNED",
  })
  void unsafeCharacters(String why, String hex, Kind kind) {
    int codePoint = Integer.parseInt(hex, 16);
    assertThat(ShownText.kindOf(codePoint)).as(why).contains(kind);
    String name = "report" + new String(Character.toChars(codePoint)) + "txt";
    assertThat(ShownText.firstRefused(name, Rule.NAME))
        .as(why)
        .hasValueSatisfying(
            f -> {
              assertThat(f.index()).isEqualTo(6);
              assertThat(f.codePoint()).isEqualTo(codePoint);
              assertThat(f.kind()).isEqualTo(kind);
              // The message names the code point and never carries the character itself.
              assertThat(f.describe())
                  .startsWith(ShownText.codePoint(codePoint))
                  .contains(kind.description(), "at character 7")
                  .doesNotContain(new String(Character.toChars(codePoint)));
            });
  }

  @ParameterizedTest(name = "ordinary: {0}")
  @ValueSource(
      strings = {
        "result.json",
        "with space.txt",
        "ünïcödé/файл.txt",
        "отчёт-2026.pdf",
        "تقرير.txt",
        "报告.md",
        "e\u0301t\u00e9",
        "emoji-\uD83D\uDE00.png",
        "a~b!c@d#e$f%g^h&i(j)k[l]m{n}o+p=q,r;s'"
      })
  void ordinaryTextPassesBothRules(String text) {
    assertThat(ShownText.firstRefused(text, Rule.NAME)).isEmpty();
    assertThat(ShownText.firstRefused(text, Rule.TEXT)).isEmpty();
  }

  @Test
  void freeTextAdmitsWhatCannotMoveTheCursorOrReorderTheLine() {
    for (String text : new String[] {"CHG-1042\u00a0urgent", "a\uE000b", "x\u0378y"}) {
      assertThat(ShownText.firstRefused(text, Rule.TEXT)).as(text).isEmpty();
      assertThat(ShownText.firstRefused(text, Rule.NAME)).as(text).isPresent();
    }
    for (String text :
        new String[] {
          "CHG-1042 \u001b]52;c;ZWNobyBwd25lZA==\u0007",
          "CHG-1042\u202e",
          "CHG\u200b-1042",
          "two\nlines",
          "\ud800"
        }) {
      assertThat(ShownText.firstRefused(text, Rule.TEXT)).as(text).isPresent();
    }
  }

  @Test
  void theFirstRefusedCharacterIsTheOneNamed() {
    assertThat(ShownText.firstRefused("a\uD83D\uDE00\u202Eb\u200B", Rule.NAME))
        .hasValueSatisfying(
            f -> {
              assertThat(f.index()).isEqualTo(3);
              assertThat(f.describe())
                  .isEqualTo(
                      "U+202E RIGHT-TO-LEFT OVERRIDE (a bidirectional control) at character 4");
            });
  }

  @Test
  void visibleNamesEachRefusedCharacterAndKeepsTheRest() {
    assertThat(ShownText.visible("report\u202Eexe.txt", Rule.NAME))
        .isEqualTo("report<U+202E>exe.txt");
    assertThat(ShownText.visible("\u001b]52;c;eA==\u0007 ok \uD83D\uDE00", Rule.TEXT))
        .isEqualTo("<U+001B>]52;c;eA==<U+0007> ok \uD83D\uDE00");
    assertThat(ShownText.visible("a\u00a0b", Rule.TEXT)).isEqualTo("a\u00a0b");
    assertThat(ShownText.visible("a\u00a0b", Rule.NAME)).isEqualTo("a<U+00A0>b");
    assertThat(ShownText.visible("x\uD800", Rule.NAME)).isEqualTo("x<U+D800>");
    String plain = "plain text";
    assertThat(ShownText.visible(plain, Rule.NAME)).isSameAs(plain);
  }
}
