package dev.agentsandbox.policy.run;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Removes secrets from text a run produced before it is stored or shown: the values the run was
 * given in its environment, and anything shaped like a well-known credential.
 *
 * <p>{@link #redact} works on a whole text. Output that arrives as a stream and must be cut before
 * its line ends is redacted by {@link StreamRedactor}, which asks {@link #holdFrom} where a cut is
 * safe: never inside a secret, and never before the start of something that more text could still
 * make a secret.
 *
 * <p>Immutable and thread-safe.
 */
public final class Redactor {
  /** What a redacted secret is replaced with. */
  public static final String MARK = "[REDACTED]";

  /** Shorter env values are not redacted: "1" or "yes" would blank out unrelated output. */
  static final int MIN_SECRET_LENGTH = 6;

  /**
   * How much of a text's end a cut always holds back: longer than the lead of every shape (the
   * longest, {@code -----BEGIN ENCRYPTED PRIVATE KEY-----}, is 37 characters), so a lead cut short
   * is never emitted before the rest of it arrives.
   */
  static final int LEAD_HOLD = 64;

  /** The first line of a PEM private key block. */
  static final Pattern KEY_BEGIN = Pattern.compile("-----BEGIN [A-Z ]*PRIVATE KEY-----");

  /** The last line of a PEM private key block. */
  static final Pattern KEY_END = Pattern.compile("-----END [A-Z ]*PRIVATE KEY-----");

  /**
   * One credential shape: what {@link #redact} replaces; the words one of which every match (and
   * every unfinished start longer than {@link #LEAD_HOLD}) holds, lower-cased, so that text holding
   * none is not searched at all; and the forms of its unfinished start at the end of a text (each
   * anchored at {@code \z}, possessive so a long run is scanned once) that more text could still
   * complete or lengthen.
   */
  private record Shape(String name, List<String> leads, Pattern whole, List<Pattern> unfinished) {
    boolean mayOccurIn(String lowerCased) {
      for (String lead : leads) {
        if (lowerCased.contains(lead)) {
          return true;
        }
      }
      return false;
    }
  }

  /**
   * Credential shapes, each a reason a reviewer can check: PEM private keys, authorization headers,
   * bearer and basic credentials, JWTs, AWS access key ids, GitHub, GitLab, Slack, OpenAI-style and
   * Anthropic keys, HashiCorp Vault tokens ({@code hvs.}, {@code hvb.}, {@code hvr.}), this
   * product's own API tokens, and {@code name=value} pairs whose name says secret.
   */
  private static final List<Shape> SHAPES =
      List.of(
          shape(
              "pem private key",
              List.of("-----begin "),
              Pattern.compile(
                  "-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|\\z)",
                  Pattern.DOTALL),
              "-----BEGIN [A-Z -]*+\\z",
              "(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*+\\z"),
          shape(
              "authorization header",
              List.of("authorization"),
              Pattern.compile("(?i)(authorization|proxy-authorization)\\s*:\\s*[^\\r\\n]+"),
              "(?i)authorization\\s*+(?::[^\\r\\n]*+)?\\z"),
          shape(
              "bearer or basic credential",
              List.of("bearer", "basic"),
              Pattern.compile("(?i)\\b(bearer|basic)\\s+[A-Za-z0-9._~+/=-]{8,}"),
              "(?i)\\b(?:bearer|basic)(?:\\s++[A-Za-z0-9._~+/=-]*+)?\\z"),
          shape(
              "jwt",
              List.of("eyj"),
              Pattern.compile("\\beyJ[A-Za-z0-9_-]{5,}\\.[A-Za-z0-9_-]{5,}\\.[A-Za-z0-9_-]{5,}"),
              "\\beyJ[A-Za-z0-9_-]*+(?:\\.[A-Za-z0-9_-]*+(?:\\.[A-Za-z0-9_-]*+)?)?\\z"),
          // Bounded (20 characters): the lead hold covers it.
          shape(
              "aws access key id",
              List.of("akia", "asia", "agpa", "aida", "aroa"),
              Pattern.compile("\\b(AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\\b")),
          shape(
              "github token",
              List.of("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
              Pattern.compile("\\b(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
              "\\b(?:gh[pousr]_[A-Za-z0-9]*+|github_pat_[A-Za-z0-9_]*+)\\z"),
          shape(
              "gitlab token",
              List.of("glpat-"),
              Pattern.compile("\\bglpat-[A-Za-z0-9_-]{20,}"),
              "\\bglpat-[A-Za-z0-9_-]*+\\z"),
          shape(
              "vault token",
              List.of("hvs.", "hvb.", "hvr."),
              Pattern.compile("\\bhv[sbr]\\.[A-Za-z0-9_-]{20,}"),
              "\\bhv[sbr]\\.[A-Za-z0-9_-]*+\\z"),
          shape(
              "slack token",
              List.of("xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-"),
              Pattern.compile("\\bxox[abprs]-[A-Za-z0-9-]{10,}"),
              "\\bxox[abprs]-[A-Za-z0-9-]*+\\z"),
          shape(
              "openai or anthropic key",
              List.of("sk-"),
              Pattern.compile("\\bsk-(ant-)?[A-Za-z0-9_-]{20,}"),
              "\\bsk-[A-Za-z0-9_-]*+\\z"),
          shape(
              "agent sandbox token",
              List.of("asb_"),
              Pattern.compile("\\basb_[A-Za-z0-9_-]{20,}"),
              "\\basb_[A-Za-z0-9_-]*+\\z"),
          // From the keyword on, which keeps the search linear (a name matched from its start was
          // tried from every character of a long run): the name before the keyword stays in the
          // output as it is, and the name and separator are kept so the reader knows what was
          // there.
          shape(
              "secret assignment",
              List.of("passw", "secret", "token", "key"),
              Pattern.compile(
                  "(?i)((password|passwd|secret|token|api[_-]?key|access[_-]?key)[a-z0-9_.-]*+)"
                      + "(\\s*+[=:]\\s*+)(\"[^\"]*\"|'[^']*'|[^\\s\"']+)"),
              "(?i)(?:password|passwd|secret|token|api[_-]?key|access[_-]?key)[a-z0-9_.-]*+"
                  + "(?:\\s*+[=:]\\s*+(?:\"[^\"]*+|'[^']*+|[^\\s\"']*+))?\\z"));

  private static Shape shape(String name, List<String> leads, Pattern whole, String... unfinished) {
    List<Pattern> forms = new ArrayList<>();
    for (String form : unfinished) {
      forms.add(Pattern.compile(form));
    }
    return new Shape(name, leads, whole, List.copyOf(forms));
  }

  private final List<String> secrets;

  /**
   * A redactor for one run.
   *
   * @param envValues the values the run was given; each of at least {@value #MIN_SECRET_LENGTH}
   *     characters is removed wherever it appears, and so is each line of one that spans lines
   *     (output is redacted line by line, so the value whole never meets it)
   */
  public Redactor(Collection<String> envValues) {
    Set<String> kept = new LinkedHashSet<>();
    for (String value : envValues) {
      if (value == null) {
        continue;
      }
      keep(kept, value);
      if (value.indexOf('\n') >= 0 || value.indexOf('\r') >= 0) {
        for (String line : value.split("[\\r\\n]+")) {
          keep(kept, line);
        }
      }
    }
    List<String> sorted = new ArrayList<>(kept);
    // Longest first, so a value that contains another is removed whole.
    sorted.sort(Comparator.comparingInt(String::length).reversed());
    this.secrets = List.copyOf(sorted);
  }

  private static void keep(Set<String> kept, String value) {
    if (value.length() >= MIN_SECRET_LENGTH) {
      kept.add(value);
    }
  }

  /** The text with every secret replaced by {@link #MARK}. */
  public String redact(String text) {
    String out = text;
    for (String secret : secrets) {
      out = out.replace(secret, MARK);
    }
    String lower = out.toLowerCase(Locale.ROOT);
    for (Shape shape : SHAPES) {
      if (!shape.mayOccurIn(lower)) {
        continue;
      }
      Matcher m = shape.whole().matcher(out);
      if (!m.find()) {
        continue;
      }
      StringBuilder sb = new StringBuilder(out.length());
      do {
        if (m.groupCount() >= 4 && m.group(3) != null && m.group(4) != null) {
          // name=value: keep the name so the reader knows what was there.
          m.appendReplacement(sb, Matcher.quoteReplacement(m.group(1) + m.group(3) + MARK));
        } else {
          m.appendReplacement(sb, MARK);
        }
      } while (m.find());
      m.appendTail(sb);
      out = sb.toString();
      lower = out.toLowerCase(Locale.ROOT);
    }
    return out;
  }

  /** The length of the longest value this redactor removes (0 when it has none). */
  public int longestSecret() {
    return secrets.isEmpty() ? 0 : secrets.get(0).length();
  }

  /** Whether the text holds the first line of a PEM private key block. */
  static boolean beginsPrivateKey(String text) {
    return KEY_BEGIN.matcher(text).find();
  }

  /**
   * Where a text that will go on must be cut so that each side can be redacted alone with the
   * result {@link #redact} would give the two together: the text before the returned index may be
   * redacted and shown now, the rest must wait for what follows. The cut is never inside a secret
   * or a shape's match, never before the start of an unfinished shape or of what could become an
   * env value, never within {@link #LEAD_HOLD} characters of the end, and where it can be, not
   * between two word characters (where {@code \b} would see a boundary that is not there).
   */
  int holdFrom(String text) {
    int length = text.length();
    int cut = Math.max(0, length - Math.max(LEAD_HOLD, longestSecret() - 1));
    String lower = text.toLowerCase(Locale.ROOT);
    for (Shape shape : SHAPES) {
      if (!shape.mayOccurIn(lower)) {
        continue;
      }
      for (Pattern form : shape.unfinished()) {
        Matcher m = form.matcher(text);
        if (m.find()) {
          cut = Math.min(cut, m.start());
        }
      }
    }
    List<int[]> spans = spans(text, lower);
    int before;
    do {
      before = cut;
      cut = offWordBoundary(text, cut);
      for (int[] span : spans) {
        if (span[0] < cut && cut < span[1]) {
          cut = span[0];
        }
      }
    } while (cut != before);
    return cut;
  }

  /** Every occurrence of a secret and every match of a shape, as {@code [start, end)}. */
  private List<int[]> spans(String text, String lower) {
    List<int[]> spans = new ArrayList<>();
    for (String secret : secrets) {
      for (int at = text.indexOf(secret); at >= 0; at = text.indexOf(secret, at + 1)) {
        spans.add(new int[] {at, at + secret.length()});
      }
    }
    for (Shape shape : SHAPES) {
      if (!shape.mayOccurIn(lower)) {
        continue;
      }
      Matcher m = shape.whole().matcher(text);
      while (m.find()) {
        spans.add(new int[] {m.start(), m.end()});
      }
    }
    return spans;
  }

  /**
   * The cut moved left, by at most {@link #LEAD_HOLD}, to where it does not split two word
   * characters or a surrogate pair; unchanged when there is no such place that near.
   */
  private static int offWordBoundary(String text, int cut) {
    int limit = Math.max(0, cut - LEAD_HOLD);
    for (int at = cut; at > limit; at--) {
      if (at >= text.length()) {
        return at;
      }
      char left = text.charAt(at - 1);
      char right = text.charAt(at);
      if (!Character.isHighSurrogate(left) && !(word(left) && word(right))) {
        return at;
      }
    }
    return limit == 0 ? 0 : cut;
  }

  private static boolean word(char c) {
    return c < 128 && (Character.isLetterOrDigit(c) || c == '_');
  }
}
