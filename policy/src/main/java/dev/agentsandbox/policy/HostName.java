package dev.agentsandbox.policy;

import dev.agentsandbox.policy.InvalidHostException.Problem;
import dev.agentsandbox.policy.text.Bounded;
import java.net.IDN;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * Canonical host names: lower case, ASCII (punycode), no trailing dot, letters-digits-hyphen labels
 * of at most 63 characters, at most 253 characters in all.
 *
 * <p>The same canonical form is used for matching against the allow-list and for resolving, so a
 * name cannot be spelled one way to pass the check and another way to be dialled. Anything that is
 * an IP address in any spelling accepted by common resolvers ({@code 127.1}, {@code 0x7f.1}, {@code
 * 2130706433}, {@code 0177.0.0.1}, {@code [::1]}) is refused as {@link Problem#IP_LITERAL}: the
 * WHATWG URL standard and {@code inet_aton} treat a name whose last label is numeric as an IPv4
 * address, so such names are never host names here.
 *
 * <p>Stateless and thread-safe.
 */
public final class HostName {
  /** Longest name in the DNS, without the trailing dot (RFC 1035 section 2.3.4). */
  public static final int MAX_NAME_LENGTH = 253;

  /** Longest label (RFC 1035 section 2.3.4). */
  public static final int MAX_LABEL_LENGTH = 63;

  private static final Pattern LABEL = Pattern.compile("[a-z0-9](?:[a-z0-9-]*[a-z0-9])?");
  private static final Pattern NUMERIC_LABEL = Pattern.compile("[0-9]+|0x[0-9a-f]*");
  private static final int ECHO_LIMIT = 80;

  private HostName() {}

  /**
   * Canonicalizes a host name written by an administrator (an allow-list entry). Non-ASCII input is
   * refused with the punycode form to write instead, so that what is stored is exactly what is
   * matched.
   *
   * @throws InvalidHostException when the input is not a host name
   */
  public static String canonicalEntryHost(String raw) {
    String checked = checkCharacters(raw);
    if (!isAscii(checked)) {
      String hint = punycodeHint(checked);
      throw invalid(
          "non-ASCII names are refused"
              + (hint == null ? "" : " (write the punycode form " + hint + ")"));
    }
    return checkStructure(checked.toLowerCase(Locale.ROOT));
  }

  /**
   * Canonicalizes a host name taken from a request (a proxy's CONNECT or absolute-form target).
   * Non-ASCII names are converted with IDNA (UTS 46 mapping, as {@link IDN#toASCII} does) so the
   * result is the name that is both matched and resolved.
   *
   * @throws InvalidHostException when the input is not a host name
   */
  public static String canonicalTargetHost(String raw) {
    String checked = checkCharacters(raw);
    String ascii = checked;
    if (!isAscii(checked)) {
      try {
        ascii = IDN.toASCII(checked, IDN.ALLOW_UNASSIGNED);
      } catch (IllegalArgumentException e) {
        throw invalid("the name is not valid IDNA");
      } catch (RuntimeException e) {
        // The JDK's Punycode throws a bare RuntimeException for a label over 1,000 code units
        // ("input too long"), which a name under the length cap can hold (found by fuzzing).
        throw invalid("the name is not valid IDNA (a label is too long)");
      }
    }
    return checkStructure(ascii.toLowerCase(Locale.ROOT));
  }

  private static String checkCharacters(String raw) {
    if (raw == null || raw.isEmpty()) {
      throw invalid("the host name is empty");
    }
    if (raw.length() > 4 * MAX_NAME_LENGTH) {
      throw invalid("the host name is longer than " + MAX_NAME_LENGTH + " characters");
    }
    if (raw.startsWith("[") || raw.endsWith("]")) {
      String inner = raw.replace("[", "").replace("]", "");
      if (inner.indexOf(':') >= 0) {
        throw ipLiteral();
      }
      throw invalid("brackets are only for IPv6 addresses, and addresses are refused");
    }
    for (int i = 0; i < raw.length(); i++) {
      char c = raw.charAt(i);
      if (Character.isWhitespace(c) || Character.isISOControl(c) || Character.isSpaceChar(c)) {
        throw invalid("white space or control characters are refused");
      }
      switch (c) {
        case '%' -> throw invalid("percent-encoding is refused");
        case '\\' -> throw invalid("backslashes are refused");
        case '@' -> throw invalid("user information (user@host) is refused");
        case '/', '?', '#' -> throw invalid("a path, query or fragment is refused");
        case ':' -> throw ipLiteral();
        default -> {}
      }
    }
    return raw;
  }

  private static String checkStructure(String lower) {
    String name = lower.endsWith(".") ? lower.substring(0, lower.length() - 1) : lower;
    if (name.isEmpty()) {
      throw invalid("the host name is empty");
    }
    if (name.length() > MAX_NAME_LENGTH) {
      throw invalid("the host name is longer than " + MAX_NAME_LENGTH + " characters");
    }
    String[] labels = name.split("\\.", -1);
    if (NUMERIC_LABEL.matcher(labels[labels.length - 1]).matches()) {
      throw ipLiteral();
    }
    for (String label : labels) {
      if (label.isEmpty()) {
        throw invalid("empty label in " + echo(name));
      }
      if (label.length() > MAX_LABEL_LENGTH) {
        throw invalid("a label is longer than " + MAX_LABEL_LENGTH + " characters");
      }
      if (!LABEL.matcher(label).matches()) {
        throw invalid("label " + echo(label) + " may hold only letters, digits and inner hyphens");
      }
    }
    return name;
  }

  private static boolean isAscii(String s) {
    for (int i = 0; i < s.length(); i++) {
      if (s.charAt(i) > 0x7f) {
        return false;
      }
    }
    return true;
  }

  private static String punycodeHint(String unicode) {
    try {
      return IDN.toASCII(unicode, IDN.ALLOW_UNASSIGNED).toLowerCase(Locale.ROOT);
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  /** Quotes a bounded prefix of untrusted input for an error message. */
  static String echo(String s) {
    return "'" + Bounded.text(s, ECHO_LIMIT, Bounded.Escape.NONE) + "'";
  }

  private static InvalidHostException invalid(String message) {
    return new InvalidHostException(Problem.INVALID, message);
  }

  private static InvalidHostException ipLiteral() {
    return new InvalidHostException(
        Problem.IP_LITERAL, "IP addresses are refused: entries and targets are host names");
  }
}
