package dev.agentsandbox.policy.http;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * A request's origin-form target as the proxy matches and forwards it on an inspected host: the
 * path percent-decoded once, repeated slashes merged, {@code .} and {@code ..} segments removed
 * (RFC 3986 section 5.2.4), then encoded again in one canonical spelling. What was matched is what
 * is sent: the upstream receives {@link #forwarded()}, never the client's spelling.
 *
 * <p>Whatever two servers could read two ways is refused, never guessed ({@link #parse} answers
 * with the reason): an encoded slash or backslash ({@code %2F}, {@code %5C}), an encoded percent
 * ({@code %25}, which a second decoding would turn into anything), path parameters ({@code ;}), a
 * fragment, a raw backslash, control characters and NUL, bytes that are not UTF-8 (overlong forms
 * such as {@code %C0%AE} included), a malformed escape, and anything that is not origin-form
 * ({@code *}, an absolute URL). The query is kept as sent and never matched. Immutable.
 *
 * @param segments the decoded segments, without empty, {@code .} or {@code ..} ones
 * @param trailingSlash whether the client's path ended with a slash (kept when forwarding, ignored
 *     when matching)
 * @param query the query as sent, without its {@code ?}; empty when there was none
 */
public record RequestPath(List<String> segments, boolean trailingSlash, Optional<String> query) {
  /** The longest request-target the proxy normalises. */
  public static final int MAX_TARGET = 8192;

  /** Characters kept as they are when a segment is encoded again (RFC 3986 pchar but ';'). */
  private static final String KEPT = "-._~!$&'()*+,=:@";

  public RequestPath {
    segments = List.copyOf(segments);
    Objects.requireNonNull(query, "query");
  }

  /** What {@link #parse} found: a normalised path, or why the target was refused. */
  public sealed interface Parsed permits Normalised, Ambiguous {}

  /** The target normalised. */
  public record Normalised(RequestPath path) implements Parsed {}

  /** The target refused, with a short reason for the refusal body (never echoing the target). */
  public record Ambiguous(String detail) implements Parsed {}

  /** Normalises a request line's target. */
  public static Parsed parse(String target) {
    if (target == null || target.isEmpty() || target.charAt(0) != '/') {
      return new Ambiguous("the request target is not a path (origin-form /...)");
    }
    if (target.length() > MAX_TARGET) {
      return new Ambiguous("the request target is longer than " + MAX_TARGET + " characters");
    }
    if (target.indexOf('#') >= 0) {
      return new Ambiguous("a fragment (#) is never part of a request");
    }
    int question = target.indexOf('?');
    String rawPath = question < 0 ? target : target.substring(0, question);
    Optional<String> query =
        question < 0 ? Optional.empty() : Optional.of(target.substring(question + 1));
    if (query.isPresent()) {
      String problem = queryProblem(query.get());
      if (problem != null) {
        return new Ambiguous(problem);
      }
    }
    List<String> segments = new ArrayList<>();
    String[] parts = rawPath.substring(1).split("/", -1);
    boolean trailingSlash = false;
    for (int i = 0; i < parts.length; i++) {
      String raw = parts[i];
      Object decoded = decode(raw);
      if (decoded instanceof Ambiguous refused) {
        return refused;
      }
      String segment = (String) decoded;
      boolean last = i == parts.length - 1;
      switch (segment) {
        case "" -> trailingSlash = last && i > 0;
        case "." -> trailingSlash = last;
        case ".." -> {
          if (!segments.isEmpty()) {
            segments.remove(segments.size() - 1);
          }
          trailingSlash = last;
        }
        default -> {
          segments.add(segment);
          trailingSlash = false;
        }
      }
    }
    return new Normalised(new RequestPath(segments, trailingSlash && !segments.isEmpty(), query));
  }

  /** A segment decoded once, or an {@link Ambiguous} refusal. */
  private static Object decode(String raw) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(raw.length());
    for (int i = 0; i < raw.length(); i++) {
      char c = raw.charAt(i);
      if (c == '%') {
        if (i + 2 >= raw.length()) {
          return new Ambiguous("a malformed percent escape");
        }
        int high = Character.digit(raw.charAt(i + 1), 16);
        int low = Character.digit(raw.charAt(i + 2), 16);
        if (high < 0 || low < 0) {
          return new Ambiguous("a malformed percent escape");
        }
        int b = high * 16 + low;
        switch (b) {
          case '/' -> {
            return new Ambiguous("an encoded slash (%2F) is read as a slash by some servers");
          }
          case '\\' -> {
            return new Ambiguous("an encoded backslash (%5C) is read as a slash by some servers");
          }
          case '%' -> {
            return new Ambiguous(
                "an encoded percent (%25) would mean something else to a server that decodes"
                    + " twice");
          }
          case ';' -> {
            return new Ambiguous("path parameters (;) are read differently by different servers");
          }
          default -> {}
        }
        if (b < 0x20 || b == 0x7f) {
          return new Ambiguous("a control character or NUL in the path");
        }
        bytes.write(b);
        i += 2;
        continue;
      }
      String problem = rawProblem(c);
      if (problem != null) {
        return new Ambiguous(problem);
      }
      bytes.write(c);
    }
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes.toByteArray()))
          .toString();
    } catch (CharacterCodingException e) {
      return new Ambiguous("the decoded path is not UTF-8 (overlong and broken forms are refused)");
    }
  }

  private static String rawProblem(char c) {
    if (c == ';') {
      return "path parameters (;) are read differently by different servers";
    }
    if (c == '\\') {
      return "a backslash is read as a slash by some servers";
    }
    if (c < 0x21 || c >= 0x7f) {
      return "a space, control or non-ASCII character in the path (percent-encode it)";
    }
    if ("\"<>^`{|}[]".indexOf(c) >= 0) {
      return "'" + c + "' is not allowed in a path (percent-encode it)";
    }
    return null;
  }

  private static String queryProblem(String query) {
    for (int i = 0; i < query.length(); i++) {
      char c = query.charAt(i);
      if (c < 0x21 || c >= 0x7f) {
        return "a space, control or non-ASCII character in the query (percent-encode it)";
      }
    }
    return null;
  }

  /** The decoded path as matched and reported: {@code /} and the segments, query dropped. */
  public String path() {
    return "/" + String.join("/", segments) + (trailingSlash ? "/" : "");
  }

  /** The target sent upstream: every segment encoded in one spelling, then the query as sent. */
  public String forwarded() {
    StringBuilder out = new StringBuilder("/");
    for (int i = 0; i < segments.size(); i++) {
      if (i > 0) {
        out.append('/');
      }
      for (byte b : segments.get(i).getBytes(StandardCharsets.UTF_8)) {
        int c = b & 0xff;
        boolean kept =
            (c >= 'a' && c <= 'z')
                || (c >= 'A' && c <= 'Z')
                || (c >= '0' && c <= '9')
                || (c < 0x80 && KEPT.indexOf(c) >= 0);
        if (kept) {
          out.append((char) c);
        } else {
          out.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)));
          out.append(Character.toUpperCase(Character.forDigit(c & 0xf, 16)));
        }
      }
    }
    if (trailingSlash) {
      out.append('/');
    }
    query.ifPresent(q -> out.append('?').append(q));
    return out.toString();
  }
}
