package dev.agentsandbox.cli;

import dev.agentsandbox.policy.text.ShownText;
import java.util.Optional;

/**
 * Text from a workload or another user, made safe to show on an operator's terminal: every
 * character {@link ShownText.Rule#TEXT} refuses (ESC and so every escape sequence — a clipboard
 * write with OSC 52, a cleared screen, a retitled window —, C1 controls, bidirectional controls,
 * invisible characters) is written as {@code <U+XXXX>}. Used only where the stream is a terminal: a
 * pipe gets the bytes as the workload wrote them.
 */
final class TerminalText {
  private TerminalText() {}

  /** One line of a status message or a table cell: nothing in it may act, not even a newline. */
  static String line(String text) {
    return ShownText.visible(text, ShownText.Rule.TEXT);
  }

  /**
   * Escapes one output stream chunk by chunk: line feeds and tabs stay, a CR LF stays, a lone
   * carriage return (which would overwrite what was printed) starts a new line, and everything else
   * the rule refuses is named. Keeps a CR or a high surrogate that ends a chunk until the next, so
   * a pair split between two reads is still a pair. Not thread-safe: one per stream.
   */
  static final class Escaper {
    private boolean pendingReturn;
    private char pendingHigh;

    /** The chunk as it may be shown; a trailing CR or high surrogate comes with the next call. */
    String feed(CharSequence chunk) {
      StringBuilder out = new StringBuilder(chunk.length() + 16);
      int i = 0;
      if (pendingHigh != 0) {
        if (chunk.length() > 0 && Character.isLowSurrogate(chunk.charAt(0))) {
          out.append(pendingHigh).append(chunk.charAt(0));
          i = 1;
        } else {
          out.append(visible(pendingHigh));
        }
        pendingHigh = 0;
      }
      for (; i < chunk.length(); i++) {
        char c = chunk.charAt(i);
        if (pendingReturn) {
          pendingReturn = false;
          out.append(c == '\n' ? "\r\n" : "\n");
          if (c == '\n') {
            continue;
          }
        }
        if (c == '\r') {
          pendingReturn = true;
        } else if (c == '\n' || c == '\t') {
          out.append(c);
        } else if (Character.isHighSurrogate(c)) {
          if (i + 1 == chunk.length()) {
            pendingHigh = c;
          } else if (Character.isLowSurrogate(chunk.charAt(i + 1))) {
            int codePoint = Character.toCodePoint(c, chunk.charAt(++i));
            out.append(shown(codePoint));
          } else {
            out.append(visible(c));
          }
        } else {
          out.append(shown(c));
        }
      }
      return out.toString();
    }

    /** What is still held at the end of the stream. */
    String finish() {
      String rest = (pendingHigh != 0 ? visible(pendingHigh) : "") + (pendingReturn ? "\n" : "");
      pendingHigh = 0;
      pendingReturn = false;
      return rest;
    }

    private static String shown(int codePoint) {
      Optional<ShownText.Kind> kind = ShownText.kindOf(codePoint);
      if (kind.isPresent() && ShownText.Rule.TEXT.refuses(kind.get())) {
        return "<" + ShownText.codePoint(codePoint) + ">";
      }
      return new String(Character.toChars(codePoint));
    }

    private static String visible(char loneSurrogate) {
      return "<" + ShownText.codePoint(loneSurrogate) + ">";
    }
  }
}
