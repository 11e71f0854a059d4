package dev.agentsandbox.server.http;

/** Bounds untrusted text before it goes into a message or a log. */
public final class Echo {
  private static final int LIMIT = 120;

  private Echo() {}

  /** The text, cut at {@value #LIMIT} characters, with control characters replaced. */
  public static String bounded(String text) {
    if (text == null) {
      return "";
    }
    String cut = text.length() > LIMIT ? text.substring(0, LIMIT) + "..." : text;
    StringBuilder out = new StringBuilder(cut.length());
    cut.codePoints().forEach(c -> out.appendCodePoint(Character.isISOControl(c) ? '?' : c));
    return out.toString();
  }
}
