package dev.agentsandbox.policy.text;

/**
 * Untrusted text made fit to quote in a message, a log line, an audit row or a refusal body: cut to
 * a limit and escaped, the one way the whole codebase does it. Each caller names its limit and its
 * {@link Escape}; what is cut and how it is escaped is decided here and tested here as a named
 * table ({@code BoundedTest}).
 *
 * <p>The cut: at most {@code limit} characters (UTF-16 units) of the text are kept, counted before
 * escaping, and never the first half of a surrogate pair without its second (the cut moves back one
 * unit instead, so a character outside the BMP is kept whole or not at all). When anything was left
 * out, the ellipsis follows. So however long the text (a 16 KiB line, a megabyte), the result is at
 * most {@code limit} characters plus the ellipsis, and only the kept part is escaped ({@link
 * Escape#ONE_LINE} first folds the whole text's white space, so it reads all of it).
 *
 * <p>{@code null} is the empty string; a caller that names a missing value differently checks for
 * it itself. Pure; thread-safe.
 */
public final class Bounded {
  /** What a cut text ends with when the caller names nothing else. */
  public static final String ELLIPSIS = "...";

  /**
   * How the kept characters are escaped. None ever lets a control character through unless NONE.
   */
  public enum Escape {
    /**
     * Kept as is: only for text that is quoted where control characters do no harm (a JSON value,
     * an exception's message that is escaped where it is shown). An unpaired surrogate is still
     * never produced by the cut.
     */
    NONE,
    /**
     * Each control character (category Cc: C0, DEL, C1) and each unpaired surrogate as {@code ?};
     * every other character kept.
     */
    CONTROL,
    /**
     * One line: each run of whitespace (space, tab, line feed, vertical tab, form feed, carriage
     * return) as one space and the ends stripped, before the cut; then as {@link #CONTROL}.
     */
    ONE_LINE,
    /** Everything but printable ASCII (U+0020–U+007E) as {@code ?}, one per code point. */
    PRINTABLE_ASCII,
    /** Everything but visible ASCII (U+0021–U+007E: no space either) as {@code ?}. */
    VISIBLE_ASCII,
    /**
     * Every character {@link ShownText.Rule#NAME} refuses written as {@code <U+XXXX>} ({@link
     * ShownText#visible}): for names a reviewer tells apart by eye. The limit counts the text's
     * characters, not the escapes'.
     */
    NAME,
    /**
     * Every character {@link ShownText.Rule#TEXT} refuses written as {@code <U+XXXX>}: one line of
     * free text on an operator's terminal (a command, a host, a summary), where nothing may act.
     * Unlike {@link #NAME} it keeps what only confuses the eye (confusable letters). The limit
     * counts the text's characters, not the escapes'.
     */
    TEXT
  }

  private Bounded() {}

  /** {@code text} cut to {@code limit} characters, escaped, with {@link #ELLIPSIS} when cut. */
  public static String text(String text, int limit, Escape escape) {
    return text(text, limit, escape, ELLIPSIS);
  }

  /**
   * {@code text} cut to {@code limit} characters, escaped, with {@code ellipsis} when cut (empty
   * for none).
   *
   * @throws IllegalArgumentException when {@code limit} is negative
   */
  public static String text(String text, int limit, Escape escape, String ellipsis) {
    if (limit < 0) {
      throw new IllegalArgumentException("limit must not be negative: " + limit);
    }
    if (text == null) {
      return "";
    }
    String source = escape == Escape.ONE_LINE ? oneLine(text) : text;
    int end = cut(source, limit);
    String kept = escaped(source, end, escape);
    return end < source.length() ? kept + ellipsis : kept;
  }

  /**
   * {@code text} whole and escaped when it has at most {@code limit} characters; else cut so that
   * with {@link #ELLIPSIS} it has {@code limit} (before escaping): a name over 80 characters shows
   * as its first 77 and {@code ...}.
   *
   * @throws IllegalArgumentException when {@code limit} is less than the ellipsis
   */
  public static String within(String text, int limit, Escape escape) {
    if (limit < ELLIPSIS.length()) {
      throw new IllegalArgumentException("limit must leave room for the ellipsis: " + limit);
    }
    String source = text != null && escape == Escape.ONE_LINE ? oneLine(text) : text;
    if (source != null && source.length() <= limit) {
      return text(source, limit, escape);
    }
    return text(source, limit - ELLIPSIS.length(), escape);
  }

  /** Where the kept part ends: {@code limit}, or one before when that would split a pair. */
  private static int cut(String text, int limit) {
    if (text.length() <= limit) {
      return text.length();
    }
    if (limit > 0
        && Character.isHighSurrogate(text.charAt(limit - 1))
        && Character.isLowSurrogate(text.charAt(limit))) {
      return limit - 1;
    }
    return limit;
  }

  private static String escaped(String text, int end, Escape escape) {
    return switch (escape) {
      case NONE -> text.substring(0, end);
      case NAME -> ShownText.visible(text.substring(0, end), ShownText.Rule.NAME);
      case TEXT -> ShownText.visible(text.substring(0, end), ShownText.Rule.TEXT);
      case CONTROL, ONE_LINE, PRINTABLE_ASCII, VISIBLE_ASCII -> {
        StringBuilder out = new StringBuilder(end);
        for (int i = 0; i < end; ) {
          int c = text.codePointAt(i);
          // codePointAt answers an unpaired surrogate as itself: neither kept by any rule here.
          boolean kept =
              switch (escape) {
                case PRINTABLE_ASCII -> c >= 0x20 && c <= 0x7e;
                case VISIBLE_ASCII -> c >= 0x21 && c <= 0x7e;
                default ->
                    !Character.isISOControl(c)
                        && !(Character.isBmpCodePoint(c) && Character.isSurrogate((char) c));
              };
          if (kept) {
            out.appendCodePoint(c);
          } else {
            out.append('?');
          }
          i += Character.charCount(c);
        }
        yield out.toString();
      }
    };
  }

  private static String oneLine(String text) {
    StringBuilder out = new StringBuilder(text.length());
    boolean space = false;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == ' ' || c == '\t' || c == '\n' || c == 0x0b || c == '\f' || c == '\r') {
        space = true;
      } else {
        if (space && !out.isEmpty()) {
          out.append(' ');
        }
        space = false;
        out.append(c);
      }
    }
    return out.toString();
  }
}
