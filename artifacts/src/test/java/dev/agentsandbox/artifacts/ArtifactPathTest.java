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
