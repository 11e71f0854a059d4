package dev.agentsandbox.mcp;

import dev.agentsandbox.policy.text.Bounded;

/** Bounded text for messages and results: a model's context, like a terminal, is not infinite. */
final class Texts {
  /** The most of anything a client sent that a message quotes. */
  static final int ECHO_CHARS = 120;

  private Texts() {}

  /** {@code text} cut to {@link #ECHO_CHARS}, with an ellipsis when cut. */
  static String bounded(String text) {
    return Bounded.text(text, ECHO_CHARS, Bounded.Escape.NONE, "…");
  }

  /**
   * The last {@code chars} characters of {@code text}, never splitting a surrogate pair, with a
   * first line saying how much was left out.
   */
  static String tail(String text, int chars) {
    if (text.length() <= chars) {
      return text;
    }
    int from = text.length() - chars;
    if (Character.isLowSurrogate(text.charAt(from))) {
      from++;
    }
    return "[… " + from + " earlier characters left out]\n" + text.substring(from);
  }
}
