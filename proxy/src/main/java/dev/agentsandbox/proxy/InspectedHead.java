package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.HostName;
import dev.agentsandbox.policy.InvalidHostException;
import dev.agentsandbox.policy.http.RequestPath;
import dev.agentsandbox.policy.net.EgressDecider;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpVersion;
import java.util.List;

/**
 * The head of a request on an inspected host: whether it names the tunnel's host, and the head the
 * proxy sends upstream in its place.
 */
final class InspectedHead {
  private static final String EXTENSION_PREFIX = "x-http2-";

  private InspectedHead() {}

  /**
   * Null when the request names exactly the tunnel's host: one {@code Host} value (HTTP/2's {@code
   * :authority} arrives as one) whose host is the tunnel's and whose port, if any, is the tunnel's;
   * an HTTP/2 {@code :scheme} of {@code https}.
   */
  static String authorityProblem(HttpHeaders headers, String host, int tunnelPort) {
    List<String> hosts = headers.getAll(HttpHeaderNames.HOST);
    if (hosts.size() != 1) {
      return hosts.isEmpty()
          ? "the request names no host (Host or :authority)"
          : "the request names its host " + hosts.size() + " times (Host and :authority)";
    }
    String value = hosts.get(0);
    String hostPart = value;
    int port = tunnelPort;
    int colon = value.lastIndexOf(':');
    if (colon >= 0 && value.indexOf(']') < 0) {
      hostPart = value.substring(0, colon);
      port = EgressDecider.parsePort(value.substring(colon + 1));
    }
    String canonical;
    try {
      canonical = HostName.canonicalTargetHost(hostPart);
    } catch (InvalidHostException e) {
      return "the request names '" + Echo.of(value) + "', not " + host;
    }
    if (!canonical.equals(host) || port != tunnelPort) {
      return "the request names '"
          + Echo.of(value)
          + "', but this tunnel is to "
          + host
          + ":"
          + tunnelPort;
    }
    String scheme = headers.get(EXTENSION_PREFIX + "scheme");
    if (scheme != null && !scheme.equals("https")) {
      return "an HTTP/2 :scheme of '" + Echo.of(scheme) + "' inside TLS";
    }
    return null;
  }

  static HttpRequest outgoing(
      HttpRequest request, RequestPath path, Inspection.Route route, int port, boolean http2) {
    HttpHeaders headers = request.headers().copy();
    HttpMessages.stripHopByHop(headers);
    headers.names().stream()
        .filter(name -> name.regionMatches(true, 0, EXTENSION_PREFIX, 0, EXTENSION_PREFIX.length()))
        .toList()
        .forEach(headers::remove);
    headers.set(HttpHeaderNames.HOST, route.host() + (port == 443 ? "" : ":" + port));
    route
        .injected()
        .ifPresent(
            injected -> {
              // Whatever the client sent under this name goes: the header carries ours alone.
              headers.remove(injected.injection().header());
              headers.set(injected.injection().header(), injected.headerValue());
              // The answer must be readable to be scrubbed (Scrubber): no compression.
              headers.set(HttpHeaderNames.ACCEPT_ENCODING, HttpHeaderValues.IDENTITY);
            });
    if (http2
        && !(request instanceof FullHttpRequest)
        && !headers.contains(HttpHeaderNames.CONTENT_LENGTH)) {
      // An HTTP/2 body ends with its stream; HTTP/1.1 needs it framed.
      headers.set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
    } else if (http2
        && request instanceof FullHttpRequest full
        && full.content().isReadable()
        && !headers.contains(HttpHeaderNames.CONTENT_LENGTH)) {
      headers.setInt(HttpHeaderNames.CONTENT_LENGTH, full.content().readableBytes());
    }
    return new DefaultHttpRequest(
        HttpVersion.HTTP_1_1, request.method(), path.forwarded(), headers);
  }
}
