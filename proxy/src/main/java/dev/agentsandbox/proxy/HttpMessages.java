package dev.agentsandbox.proxy;

import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** Header rules for forwarded HTTP messages: framing checks, upgrades, hop-by-hop stripping. */
final class HttpMessages {
  /**
   * Headers that describe one hop (RFC 9110 section 7.6.1) or the proxy itself. Transfer-Encoding
   * is hop-by-hop too, but the HTTP codecs re-frame the body and set it themselves.
   */
  private static final List<String> HOP_BY_HOP =
      List.of(
          "connection",
          "keep-alive",
          "proxy-connection",
          "proxy-authenticate",
          "proxy-authorization",
          "te",
          "trailer",
          "upgrade",
          "http2-settings");

  private HttpMessages() {}

  /**
   * What is wrong with a request's framing, or null: a signed, non-numeric or conflicting
   * Content-Length, a Transfer-Encoding other than exactly {@code chunked}, or both headers at
   * once. Any of these lets two parsers disagree on where the body ends (request smuggling).
   */
  static String framingProblem(HttpHeaders headers) {
    List<String> lengths = headers.getAll(HttpHeaderNames.CONTENT_LENGTH);
    List<String> encodings = headers.getAll(HttpHeaderNames.TRANSFER_ENCODING);
    if (!lengths.isEmpty() && !encodings.isEmpty()) {
      return "both Content-Length and Transfer-Encoding are present";
    }
    String first = null;
    for (String length : lengths) {
      for (String value : length.split(",", -1)) {
        String trimmed = value.strip();
        if (trimmed.isEmpty()
            || trimmed.length() > 18
            || !trimmed.chars().allMatch(c -> c >= '0' && c <= '9')) {
          return "Content-Length is not a plain decimal number";
        }
        if (first != null && !first.equals(trimmed)) {
          return "conflicting Content-Length values";
        }
        first = trimmed;
      }
    }
    if (encodings.size() > 1
        || (encodings.size() == 1
            && !encodings.get(0).strip().toLowerCase(Locale.ROOT).equals("chunked"))) {
      return "Transfer-Encoding other than a single 'chunked' is refused";
    }
    return null;
  }

  /** Whether the request asks to switch protocols (WebSocket, h2c). */
  static boolean isUpgrade(HttpHeaders headers) {
    return headers.contains(HttpHeaderNames.UPGRADE)
        || headers.contains("HTTP2-Settings")
        || headers.containsValue(HttpHeaderNames.CONNECTION, "upgrade", true);
  }

  /** Removes hop-by-hop and proxy headers, including every header the Connection header names. */
  static void stripHopByHop(HttpHeaders headers) {
    List<String> named = new ArrayList<>();
    for (String value : headers.getAll(HttpHeaderNames.CONNECTION)) {
      for (String token : value.split(",", -1)) {
        String name = token.strip().toLowerCase(Locale.ROOT);
        if (!name.isEmpty()
            && !name.equals("transfer-encoding")
            && !name.equals("content-length")) {
          named.add(name);
        }
      }
    }
    for (String name : named) {
      headers.remove(name);
    }
    for (String name : HOP_BY_HOP) {
      headers.remove(name);
    }
  }
}
