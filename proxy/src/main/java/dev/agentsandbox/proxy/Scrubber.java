package dev.agentsandbox.proxy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.handler.codec.http.HttpHeaders;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Replaces an injected credential's value, wherever it appears literally in a response from its
 * host, with as many {@code *} as it has bytes, so that an upstream endpoint that echoes the
 * request's headers (a debugging endpoint, a reflected error) does not hand the workload the
 * credential it was never given. Same length, so {@code Content-Length} and chunk sizes stay true;
 * a match split across two body parts is found because the last {@code length - 1} bytes of each
 * part are held back until the next (or the end). It finds the literal value only: an upstream that
 * encodes it (base64, JSON escapes, compression) can still reveal it, which is why the proxy asks
 * for an identity-encoded answer and refuses a compressed one on injected hosts (docs/proxy.md,
 * "What an inspected host can still expose"). Confined to one exchange's event loop.
 */
final class Scrubber {
  private final byte[] secret;
  private final byte[] mask;
  private byte[] held = new byte[0];
  private long replaced;

  Scrubber(byte[] secret) {
    this.secret = secret.clone();
    this.mask = "*".repeat(secret.length).getBytes(StandardCharsets.US_ASCII);
  }

  /** Replaces the value in every header of {@code headers}. */
  void headers(HttpHeaders headers) {
    String value = new String(secret, StandardCharsets.US_ASCII);
    String masked = new String(mask, StandardCharsets.US_ASCII);
    List<Map.Entry<String, String>> entries = new ArrayList<>(headers.entries());
    boolean found = false;
    for (Map.Entry<String, String> entry : entries) {
      if (entry.getValue().contains(value) || entry.getKey().contains(value)) {
        found = true;
        break;
      }
    }
    if (!found) {
      return;
    }
    headers.clear();
    for (Map.Entry<String, String> entry : entries) {
      String name = entry.getKey().replace(value, masked);
      String text = entry.getValue();
      int count = 0;
      for (int at = text.indexOf(value); at >= 0; at = text.indexOf(value, at + value.length())) {
        count++;
      }
      replaced += count;
      headers.add(name, text.replace(value, masked));
    }
  }

  /**
   * The bytes of one body part to send on, with the value replaced: all of {@code part} (and what
   * was held) but the last {@code length - 1} bytes unless {@code last}. Releases {@code part}.
   */
  ByteBuf body(ByteBuf part, boolean last, ByteBufAllocator alloc) {
    byte[] bytes = new byte[held.length + part.readableBytes()];
    System.arraycopy(held, 0, bytes, 0, held.length);
    part.readBytes(bytes, held.length, part.readableBytes());
    part.release();
    int i = 0;
    while (i <= bytes.length - secret.length) {
      if (matchesAt(bytes, i)) {
        System.arraycopy(mask, 0, bytes, i, mask.length);
        replaced++;
        i += secret.length;
      } else {
        i++;
      }
    }
    int keep = last ? 0 : Math.min(bytes.length, secret.length - 1);
    // Never hold back bytes that lie before a position where a match could still start.
    int emit = bytes.length - keep;
    held = java.util.Arrays.copyOfRange(bytes, emit, bytes.length);
    ByteBuf out = alloc.buffer(emit);
    out.writeBytes(bytes, 0, emit);
    return out;
  }

  /** How many times the value was found and replaced in this response. */
  long replaced() {
    return replaced;
  }

  private boolean matchesAt(byte[] bytes, int at) {
    for (int j = 0; j < secret.length; j++) {
      if (bytes[at + j] != secret[j]) {
        return false;
      }
    }
    return true;
  }
}
