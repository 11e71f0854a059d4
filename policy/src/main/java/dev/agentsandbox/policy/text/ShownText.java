package dev.agentsandbox.policy.text;

import java.util.Optional;
import java.util.Set;

/**
 * Which characters would let text shown to a person lie about itself: control characters that move
 * a terminal's cursor, change its colours or set its clipboard (ESC, OSC 52, C1 controls),
 * bidirectional controls that reorder what is displayed (U+202E shows {@code exe.txt} for {@code
 * txt.exe}), and characters that show nothing at all (U+200B, U+FEFF), so two different names look
 * the same. A name or a reason that a reviewer reads must not contain them; output that a terminal
 * renders has them escaped.
 *
 * <p>Two rules: {@link Rule#NAME} for identifiers a person tells apart by eye (artifact names),
 * which refuses every {@link Kind}; {@link Rule#TEXT} for one line of free text (a change's
 * reason), which admits spaces other than U+0020, private-use and unassigned code points, since
 * they cannot move the cursor or reorder the line. Pure; thread-safe.
 */
public final class ShownText {
  /** Why a character is unsafe to show. The wire names are stable. */
  public enum Kind {
    /** Unicode category Cc: C0 (U+0000–U+001F, ESC among them), DEL and C1 (U+0080–U+009F). */
    CONTROL("control character"),
    /** U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069: they reorder what follows. */
    BIDI("bidirectional control"),
    /**
     * Category Cf other than bidirectional controls (U+00AD, U+200B–U+200D, U+2060–U+2064, U+FEFF,
     * tag characters...), and letters and marks that render as nothing (the Hangul fillers U+115F,
     * U+1160, U+3164, U+FFA0; U+034F; U+17B4, U+17B5; U+2800 BRAILLE PATTERN BLANK).
     */
    INVISIBLE("invisible character"),
    /** U+2028, U+2029: a line break most programs do not count as one. */
    LINE_SEPARATOR("line or paragraph separator"),
    /** Category Zs other than U+0020 (U+00A0, U+2000–U+200A, U+3000...): looks like a space. */
    SPACE("space other than U+0020"),
    /** A surrogate code unit without its pair: not a character at all. */
    BROKEN_UTF16("unpaired surrogate"),
    /** Category Co: shown as whatever a font chooses. */
    PRIVATE_USE("private-use character"),
    /** Category Cn: no character yet (a later Unicode may make it a control). */
    UNASSIGNED("unassigned code point");

    private final String description;

    Kind(String description) {
      this.description = description;
    }

    /** What a person reads: "bidirectional control". */
    public String description() {
      return description;
    }
  }

  /** Which kinds a piece of text may not contain. */
  public enum Rule {
    /** An identifier told apart by eye: every kind refused. */
    NAME(Set.of(Kind.values())),
    /** One line of free text: cursor movers, reorderers and the invisible refused. */
    TEXT(Set.of(Kind.CONTROL, Kind.BIDI, Kind.INVISIBLE, Kind.LINE_SEPARATOR, Kind.BROKEN_UTF16));

    private final Set<Kind> refused;

    Rule(Set<Kind> refused) {
      this.refused = refused;
    }

    /** Whether this rule refuses {@code kind}. */
    public boolean refuses(Kind kind) {
      return refused.contains(kind);
    }
  }

  /**
   * One unsafe character: where it is (in UTF-16 units), which code point, and why.
   *
   * @param index its index in the string
   * @param codePoint the code point (a lone surrogate's own value)
   */
  public record Finding(int index, int codePoint, Kind kind) {
    public Finding {
      if (index < 0 || codePoint < 0 || codePoint > Character.MAX_CODE_POINT || kind == null) {
        throw new IllegalArgumentException("not a finding: " + index + ", " + codePoint);
      }
    }

    /**
     * The character as a reader can check it, never the character itself (which would do in the
     * message what it does in the text): {@code U+202E RIGHT-TO-LEFT OVERRIDE (a bidirectional
     * control) at character 4}.
     */
    public String describe() {
      String name = Character.getName(codePoint);
      return ShownText.codePoint(codePoint)
          + (name == null ? "" : " " + name)
          + " ("
          + article(kind.description())
          + ") at character "
          + (index + 1);
    }

    private static String article(String noun) {
      return ("aeiou".indexOf(noun.charAt(0)) >= 0 ? "an " : "a ") + noun;
    }
  }

  private static final Set<Integer> BIDI =
      Set.of(
          0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068,
          0x2069);

  private static final Set<Integer> BLANK_GLYPHS =
      Set.of(0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x2800, 0x3164, 0xFFA0);

  private ShownText() {}

  /** Why {@code codePoint} is unsafe to show, or empty when it is an ordinary character. */
  public static Optional<Kind> kindOf(int codePoint) {
    if (codePoint >= Character.MIN_SURROGATE && codePoint <= Character.MAX_SURROGATE) {
      return Optional.of(Kind.BROKEN_UTF16);
    }
    if (BIDI.contains(codePoint)) {
      return Optional.of(Kind.BIDI);
    }
    if (BLANK_GLYPHS.contains(codePoint)) {
      return Optional.of(Kind.INVISIBLE);
    }
    return switch (Character.getType(codePoint)) {
      case Character.CONTROL -> Optional.of(Kind.CONTROL);
      case Character.FORMAT -> Optional.of(Kind.INVISIBLE);
      case Character.LINE_SEPARATOR, Character.PARAGRAPH_SEPARATOR ->
          Optional.of(Kind.LINE_SEPARATOR);
      case Character.SPACE_SEPARATOR ->
          codePoint == ' ' ? Optional.empty() : Optional.of(Kind.SPACE);
      case Character.PRIVATE_USE -> Optional.of(Kind.PRIVATE_USE);
      case Character.UNASSIGNED -> Optional.of(Kind.UNASSIGNED);
      default -> Optional.empty();
    };
  }

  /** The first character of {@code text} that {@code rule} refuses, or empty. */
  public static Optional<Finding> firstRefused(String text, Rule rule) {
    for (int i = 0; i < text.length(); ) {
      int codePoint = text.codePointAt(i);
      // codePointAt answers a lone surrogate as itself, which kindOf calls BROKEN_UTF16.
      Optional<Kind> kind = kindOf(codePoint);
      if (kind.isPresent() && rule.refuses(kind.get())) {
        return Optional.of(new Finding(i, codePoint, kind.get()));
      }
      i += Character.charCount(codePoint);
    }
    return Optional.empty();
  }

  /**
   * {@code text} with every character {@code rule} refuses written as {@code <U+XXXX>}, for
   * messages and lists that must name what was refused without doing what it does ({@code
   * report<U+202E>exe.txt}).
   */
  public static String visible(String text, Rule rule) {
    StringBuilder shown = null;
    for (int i = 0; i < text.length(); ) {
      int codePoint = text.codePointAt(i);
      int next = i + Character.charCount(codePoint);
      Optional<Kind> kind = kindOf(codePoint);
      if (kind.isPresent() && rule.refuses(kind.get())) {
        if (shown == null) {
          shown = new StringBuilder(text.length() + 16).append(text, 0, i);
        }
        shown.append('<').append(codePoint(codePoint)).append('>');
      } else if (shown != null) {
        shown.append(text, i, next);
      }
      i = next;
    }
    return shown == null ? text : shown.toString();
  }

  /** {@code U+001B}, {@code U+1F600}: how messages name a code point. */
  public static String codePoint(int codePoint) {
    return String.format("U+%04X", codePoint);
  }
}
