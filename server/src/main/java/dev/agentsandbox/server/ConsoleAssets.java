package dev.agentsandbox.server;

import dev.agentsandbox.server.http.ApiException;
import dev.agentsandbox.server.http.Echo;
import dev.agentsandbox.server.http.Request;
import dev.agentsandbox.server.http.Response;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Serves the operator console: {@code /} is its page, {@code /console/NAME} its scripts and style
 * sheet, all read once from the jar ({@code /console/} on the class path). Every answer carries a
 * Content-Security-Policy that allows only this origin's scripts and styles (no inline script, no
 * inline style, no framing, no form posts) and an ETag; assets are revalidated on every load
 * ({@code no-cache}), so an upgraded jar is never shadowed by a stale cached script.
 */
final class ConsoleAssets {
  /** The policy of every console answer. {@code connect-src 'self'}: the API on this origin. */
  static final String CONTENT_SECURITY_POLICY =
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src"
          + " 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

  private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9-]{0,40}\\.(js|css|svg)");
  private static final Map<String, String> TYPES =
      Map.of(
          "html", "text/html; charset=utf-8",
          "js", "text/javascript; charset=utf-8",
          "css", "text/css; charset=utf-8",
          "svg", "image/svg+xml");

  private record Asset(byte[] body, String type, String etag) {}

  private final Map<String, Asset> assets;

  private ConsoleAssets(Map<String, Asset> assets) {
    this.assets = Map.copyOf(assets);
  }

  /** Loads every asset named in {@code console/assets.txt} from the class path. */
  static ConsoleAssets fromClasspath() {
    Map<String, Asset> loaded = new LinkedHashMap<>();
    String index = new String(read("assets.txt"), java.nio.charset.StandardCharsets.UTF_8);
    for (String line : index.split("\n")) {
      String name = line.strip();
      if (name.isEmpty()) {
        continue;
      }
      if (!name.equals("index.html") && !NAME.matcher(name).matches()) {
        throw new IllegalStateException("console/assets.txt names an unservable asset: " + name);
      }
      byte[] body = read(name);
      String extension = name.substring(name.lastIndexOf('.') + 1);
      loaded.put(name, new Asset(body, TYPES.get(extension), etag(body)));
    }
    // Generated from the vocabulary, never a file of the jar (ConsoleEvents).
    byte[] events = ConsoleEvents.script().getBytes(java.nio.charset.StandardCharsets.UTF_8);
    if (loaded.put(ConsoleEvents.NAME, new Asset(events, TYPES.get("js"), etag(events))) != null) {
      throw new IllegalStateException(
          "console/assets.txt names the generated " + ConsoleEvents.NAME);
    }
    if (!loaded.containsKey("index.html")) {
      throw new IllegalStateException("console/assets.txt does not name index.html");
    }
    return new ConsoleAssets(loaded);
  }

  /** {@code GET /}: the console's page. */
  Response page(Request request) {
    return answer(request, assets.get("index.html"));
  }

  /** {@code GET /console/{name}}: one script, style sheet or icon. */
  Response asset(Request request) {
    String name = request.pathParam("name");
    Asset asset = NAME.matcher(name).matches() ? assets.get(name) : null;
    if (asset == null) {
      throw new ApiException(
          404, "not_found", "no console asset named " + Echo.bounded(name) + " in this build");
    }
    return answer(request, asset);
  }

  private static Response answer(Request request, Asset asset) {
    request.onlyQueryParams(Set.of());
    boolean fresh = request.header("If-None-Match").map(asset.etag()::equals).orElse(false);
    Response response =
        fresh
            ? new Response(304, asset.type(), Map.of(), new byte[0])
            : new Response(200, asset.type(), Map.of(), asset.body());
    return response
        .withHeader("ETag", asset.etag())
        .withHeader("Cache-Control", "no-cache")
        .withHeader("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        .withHeader("Referrer-Policy", "no-referrer")
        .withHeader("X-Frame-Options", "DENY")
        .withHeader("Cross-Origin-Opener-Policy", "same-origin");
  }

  private static byte[] read(String name) {
    try (InputStream in = ConsoleAssets.class.getResourceAsStream("/console/" + name)) {
      if (in == null) {
        throw new IllegalStateException("console asset missing from the jar: console/" + name);
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException("read console asset " + name, e);
    }
  }

  private static String etag(byte[] body) {
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(body);
      return "\"" + HexFormat.of().formatHex(digest, 0, 12) + "\"";
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is part of every JDK", e);
    }
  }
}
