package dev.agentsandbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * How the CLI quotes text it did not write (a workload's command, a server's error page) in a table
 * cell or an error message: cut and escaped by {@code policy.text.Bounded}, at realistic sizes (a
 * 16 KiB line is where a cut that reads only a prefix would show).
 */
class QuotedTextTest {
  private static final String ESC = "\u001b";

  @Test
  void aCellIsNeverEmptyAndAShortOneIsWholeWithItsControlsNamed() {
    assertThat(TimelineView.bounded(null)).isEqualTo("-");
    assertThat(TimelineView.bounded(" \t")).isEqualTo("-");
    assertThat(TimelineView.bounded("curl" + ESC + "[2J")).isEqualTo("curl<U+001B>[2J");
  }

  @Test
  void aLongCellIsCutToTheWidthWithoutSplittingAnEscape() {
    String command = "a".repeat(TimelineView.SUMMARY_WIDTH - 2) + ESC + "b".repeat(16 * 1024);
    String cell = TimelineView.bounded(command);
    assertThat(cell)
        .isEqualTo("a".repeat(TimelineView.SUMMARY_WIDTH - 2) + "<U+001B>…")
        .doesNotContain(ESC);
  }

  @Test
  void aNonJsonErrorPageIsQuotedOnOneLineAndBounded() {
    String page = "<html>\r\n<title>502</title>\n" + ESC + "]52;c;bad" + "x".repeat(16 * 1024);
    ApiCallException e = ApiCallException.of("list runs", new AdminApi.Answer(502, null, page));
    assertThat(e.getMessage())
        .startsWith("list runs: <html> <title>502</title> ?]52;c;bad")
        .endsWith("... (http_502)")
        .doesNotContain(ESC, "\n", "\r")
        .hasSizeLessThan(260);
    assertThat(e.status()).isEqualTo(502);
  }
}
