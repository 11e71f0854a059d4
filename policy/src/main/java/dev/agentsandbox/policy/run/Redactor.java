package dev.agentsandbox.policy.run;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Removes secrets from text a run produced before it is stored or shown: the values the run was
 * given in its environment, and anything shaped like a well-known credential.
 *
 * <p>Immutable and thread-safe.
 */
public final class Redactor {
  /** What a redacted secret is replaced with. */
  public static final String MARK = "[REDACTED]";

  /** Shorter env values are not redacted: "1" or "yes" would blank out unrelated output. */
  static final int MIN_SECRET_LENGTH = 6;

  /**
   * Credential shapes, each a reason a reviewer can check: bearer and basic auth headers, PEM
   * private keys, JWTs, AWS access key ids, GitHub, GitLab, Slack, OpenAI-style and Anthropic keys,
   * HashiCorp Vault tokens ({@code hvs.}, {@code hvb.}, {@code hvr.}), this product's own API
   * tokens, and {@code name=value} pairs whose name says secret.
   */
  private static final List<Pattern> SHAPES =
      List.of(
          Pattern.compile(
              "-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|\\z)",
              Pattern.DOTALL),
          Pattern.compile("(?i)(authorization|proxy-authorization)\\s*:\\s*[^\\r\\n]+"),
          Pattern.compile("(?i)\\b(bearer|basic)\\s+[A-Za-z0-9._~+/=-]{8,}"),
          Pattern.compile("\\beyJ[A-Za-z0-9_-]{5,}\\.[A-Za-z0-9_-]{5,}\\.[A-Za-z0-9_-]{5,}"),
          Pattern.compile("\\b(AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\\b"),
          Pattern.compile("\\b(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
          Pattern.compile("\\bglpat-[A-Za-z0-9_-]{20,}"),
          Pattern.compile("\\bhv[sbr]\\.[A-Za-z0-9_-]{20,}"),
          Pattern.compile("\\bxox[abprs]-[A-Za-z0-9-]{10,}"),
          Pattern.compile("\\bsk-(ant-)?[A-Za-z0-9_-]{20,}"),
          Pattern.compile("\\basb_[A-Za-z0-9_-]{20,}"),
          Pattern.compile(
              "(?i)\\b([a-z0-9_.-]*(password|passwd|secret|token|api[_-]?key|access[_-]?key)"
                  + "[a-z0-9_.-]*)(\\s*[=:]\\s*)(\"[^\"]*\"|'[^']*'|[^\\s\"']+)"));

  private final List<String> secrets;

  /**
   * A redactor for one run.
   *
   * @param envValues the values the run was given; each of at least {@value #MIN_SECRET_LENGTH}
   *     characters is removed wherever it appears
   */
  public Redactor(Collection<String> envValues) {
    List<String> kept = new ArrayList<>();
    for (String value : envValues) {
      if (value != null && value.length() >= MIN_SECRET_LENGTH) {
        kept.add(value);
      }
    }
    // Longest first, so a value that contains another is removed whole.
    kept.sort(Comparator.comparingInt(String::length).reversed());
    this.secrets = List.copyOf(kept);
  }

  /** The text with every secret replaced by {@link #MARK}. */
  public String redact(String text) {
    String out = text;
    for (String secret : secrets) {
      out = out.replace(secret, MARK);
    }
    for (Pattern shape : SHAPES) {
      Matcher m = shape.matcher(out);
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
    }
    return out;
  }
}
