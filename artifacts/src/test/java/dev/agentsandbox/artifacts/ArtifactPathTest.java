package dev.agentsandbox.artifacts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class ArtifactPathTest {
  @ParameterizedTest(name = "accepted: {0}")
  @ValueSource(
      strings = {
        "result.json",
        "reports/junit/TEST-a.xml",
        "plan.tfplan",
        ".hidden",
        "a..b",
        "ünïcödé/файл.txt",
        "with space.txt"
      })
  void accepted(String path) {
    assertThat(ArtifactPath.problem(path)).isEmpty();
    assertThat(ArtifactPath.require(path)).isEqualTo(path);
  }

  @ParameterizedTest(name = "{0}: {1}")
  @CsvSource(
      delimiter = '|',
      value = {
        "parent segment escapes the folder | ../etc/passwd",
        "parent segment in the middle | a/../../b",
        "absolute path | /etc/passwd",
        "current-folder segment | ./a",
        "empty segment | a//b",
        "trailing slash | a/",
        "backslash (Windows separator) | a\\..\\b",
      })
  void refused(String why, String path) {
    assertThat(ArtifactPath.problem(path)).as(why).isPresent();
    assertThatThrownBy(() -> ArtifactPath.require(path))
        .isInstanceOf(InvalidArtifactPathException.class)
        .hasMessageStartingWith("invalid artifact path");
  }

  @ParameterizedTest(name = "control character U+{0}")
  @ValueSource(ints = {0, 1, 9, 10, 13, 27, 127})
  void controlCharactersRefused(int c) {
    String path = "a" + (char) c + "b";
    assertThat(ArtifactPath.problem(path)).isPresent();
    // the message never carries the raw control character (it would forge log lines)
    assertThatThrownBy(() -> ArtifactPath.require(path)).hasMessageNotContaining(path);
  }

  /**
   * Names that would make a reviewer (the console's list, the download's saved name, the audit row)
   * read something other than what is there. Each is refused, and the message names the character
   * by its code point, never carrying it. (The {@code \\u} escapes are the compiler's: each row
   * holds the character itself.)
   */
  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "right-to-left override: shown as invoicetxt.exe | invoice\u202Eexe.txt | U+202E",
        "left-to-right override | a\u202Db | U+202D",
        "right-to-left isolate in a folder name | reports\u2067/x | U+2067",
        "pop directional isolate | a\u2069b | U+2069",
        "right-to-left mark | a\u200Fb | U+200F",
        "Arabic letter mark | a\u061Cb | U+061C",
        "zero width space: looks like result.json | result\u200B.json | U+200B",
        "zero width joiner | a\u200Db | U+200D",
        "word joiner | a\u2060b | U+2060",
        "byte order mark at the start | \uFEFFresult.json | U+FEFF",
        "soft hyphen | re\u00ADsult.json | U+00AD",
        "Hangul filler | a\u3164b | U+3164",
        "tag characters | a\uDB40\uDC41b | U+E0041",
        "no-break space: looks like with space.txt | with\u00A0space.txt | U+00A0",
        "ideographic space | a\u3000b | U+3000",
        "line separator | a\u2028b | U+2028",
        "C1 control CSI (an 8-bit terminal escape) | a\u009B31mb | U+009B",
        "private-use character | a\uE000b | U+E000",
        "unassigned code point | a\u0378b | U+0378",
      })
  void spoofingNamesRefused(String why, String path, String named) {
    assertThat(ArtifactPath.problem(path)).as(why).isPresent();
    assertThatThrownBy(() -> ArtifactPath.require(path))
        .as(why)
        .isInstanceOf(InvalidArtifactPathException.class)
        .hasMessageContaining(named)
        .hasMessageNotContaining(path);
  }

  @ParameterizedTest(name = "lone surrogate {0}")
  @ValueSource(strings = {"\uD800", "a\uDC00b"})
  void brokenUtf16Refused(String path) {
    assertThat(ArtifactPath.problem(path)).isPresent();
  }

  @org.junit.jupiter.api.Test
  void lengthLimits() {
    assertThat(ArtifactPath.problem("x".repeat(255))).isEmpty();
    assertThat(ArtifactPath.problem("x".repeat(256))).isPresent();
    String deep = ("d".repeat(200) + "/").repeat(6) + "f";
    assertThat(deep.length()).isGreaterThan(1024);
    assertThat(ArtifactPath.problem(deep)).isPresent();
    assertThat(ArtifactPath.problem("")).isPresent();
    assertThat(ArtifactPath.problem(null)).isPresent();
  }
}
