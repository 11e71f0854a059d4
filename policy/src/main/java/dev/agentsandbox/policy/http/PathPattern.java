package dev.agentsandbox.policy.http;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A path pattern of an inspected host's rule, matched against a {@link RequestPath}'s decoded
 * segments: literal segments match themselves exactly (case-sensitive), {@code *} matches exactly
 * one segment, and a last segment {@code **} matches zero or more segments. So {@code
 * /repos/acme/**} matches {@code /repos/acme}, {@code /repos/acme/widgets} and {@code
 * /repos/acme/widgets/pulls/7}, and not {@code /repos/acme-evil} or {@code /repos/evil}.
 *
 * <p>Patterns are written in the normal form requests are matched in: no empty, {@code .} or {@code
 * ..} segment, no percent-encoding, no {@code ;}, no trailing slash (a request's trailing slash is
 * ignored for matching). Immutable and thread-safe.
 *
 * @param segments the segments before any {@code **}; each a literal or {@link #ONE}
 * @param rest whether the pattern ends in {@code **}
 */
public record PathPattern(List<String> segments, boolean rest) {
  /** The segment that matches exactly one segment. */
  public static final String ONE = "*";

  private static final String ANY = "**";
  private static final int MAX_LENGTH = 1024;

  /**
   * Characters a literal segment may hold: RFC 3986 unreserved and sub-delims but ';', ':', '@'.
   */
  private static final String SEGMENT_PUNCTUATION = "-._~!$&'()+,=:@";

  public PathPattern {
    segments = List.copyOf(segments);
    for (String segment : segments) {
      Objects.requireNonNull(segment, "segment");
      if (!segment.equals(ONE) && literalProblem(segment) != null) {
        throw new IllegalArgumentException(literalProblem(segment));
      }
    }
  }

  /**
   * Parses a pattern as an operator writes it ({@code /repos/acme/**}).
   *
   * @throws IllegalArgumentException with a message fit to show after the rule's JSON path
   */
  public static PathPattern parse(String raw) {
    if (raw.isEmpty() || raw.charAt(0) != '/') {
      throw new IllegalArgumentException("a path pattern starts with / (such as /repos/acme/**)");
    }
    if (raw.length() > MAX_LENGTH) {
      throw new IllegalArgumentException("a path pattern is at most " + MAX_LENGTH + " characters");
    }
    if (raw.equals("/")) {
      return new PathPattern(List.of(), false);
    }
    if (raw.endsWith("/")) {
      throw new IllegalArgumentException(
          "write the pattern without a trailing slash (a request's trailing slash is ignored)");
    }
    String[] parts = raw.substring(1).split("/", -1);
    List<String> segments = new ArrayList<>();
    boolean rest = false;
    for (int i = 0; i < parts.length; i++) {
      String part = parts[i];
      if (part.equals(ANY)) {
        if (i != parts.length - 1) {
          throw new IllegalArgumentException("** may only be the last segment");
        }
        rest = true;
      } else if (part.equals(ONE)) {
        segments.add(ONE);
      } else {
        String problem = literalProblem(part);
        if (problem != null) {
          throw new IllegalArgumentException(problem);
        }
        segments.add(part);
      }
    }
    return new PathPattern(segments, rest);
  }

  private static String literalProblem(String segment) {
    if (segment.isEmpty()) {
      return "an empty segment (//) is refused: requests are matched with repeated slashes merged";
    }
    if (segment.equals(".") || segment.equals("..")) {
      return "a . or .. segment is refused: requests are matched after dot segments are removed";
    }
    for (int i = 0; i < segment.length(); i++) {
      char c = segment.charAt(i);
      boolean plain =
          (c >= 'a' && c <= 'z')
              || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9')
              || SEGMENT_PUNCTUATION.indexOf(c) >= 0;
      if (!plain) {
        if (c == '*') {
          return "* and ** stand alone as a whole segment (/repos/*/issues, /repos/acme/**)";
        }
        if (c == '%') {
          return "write the segment decoded: requests are matched after percent-decoding once";
        }
        if (c == ';') {
          return "; is refused: requests with path parameters are refused";
        }
        return "'"
            + (c >= 0x21 && c < 0x7f ? String.valueOf(c) : "?")
            + "' is not allowed in a path pattern (letters, digits and -._~!$&'()+,=:@)";
      }
    }
    return null;
  }

  /** Whether the decoded segments of a normalised request path match this pattern. */
  public boolean matches(List<String> path) {
    if (rest ? path.size() < segments.size() : path.size() != segments.size()) {
      return false;
    }
    for (int i = 0; i < segments.size(); i++) {
      String mine = segments.get(i);
      if (!mine.equals(ONE) && !mine.equals(path.get(i))) {
        return false;
      }
    }
    return true;
  }

  /** Whether every path {@code other} matches is matched by this pattern too. */
  public boolean covers(PathPattern other) {
    if (rest) {
      if (other.segments.size() < segments.size()) {
        return false;
      }
    } else if (other.rest || other.segments.size() != segments.size()) {
      return false;
    }
    for (int i = 0; i < segments.size(); i++) {
      String mine = segments.get(i);
      if (!mine.equals(ONE) && !mine.equals(other.segments.get(i))) {
        // A literal covers only the same literal; it never covers another pattern's *.
        return false;
      }
    }
    return true;
  }

  /** The pattern as an operator writes it, which {@link #parse} reads back unchanged. */
  @Override
  public String toString() {
    if (segments.isEmpty() && !rest) {
      return "/";
    }
    return "/" + String.join("/", segments) + (rest ? (segments.isEmpty() ? "" : "/") + ANY : "");
  }
}
