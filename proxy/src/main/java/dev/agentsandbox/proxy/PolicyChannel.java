package dev.agentsandbox.proxy;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Optional;

/**
 * The channel an {@code --await-policy} proxy receives its run's policy on: its standard input, a
 * stream of JSON documents of which the proxy takes the first. Each document is read as soon as it
 * is complete (the writer need not close the stream); a document's duplicate keys are refused, and
 * the whole stream is capped at {@link #MAX_BYTES}. Not thread-safe: one reader at a time.
 */
final class PolicyChannel {
  /** More than any policy needs (a large allow-list and hosts table are a few KiB). */
  static final int MAX_BYTES = 1024 * 1024;

  // No FAIL_ON_TRAILING_TOKENS: reading the first document must not wait for the stream's end.
  private static final ObjectMapper JSON =
      new ObjectMapper().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

  private final InputStream in;
  private JsonParser parser;

  PolicyChannel(InputStream in) {
    this.in = new Capped(in);
  }

  /**
   * Blocks until the next whole document (as plain Java values) or the end of the stream (empty).
   *
   * @throws InvalidProxyConfigException when the bytes are not one JSON document, or reading fails
   */
  Optional<Object> next() {
    try {
      if (parser == null) {
        parser = JSON.getFactory().createParser(in);
      }
      JsonToken first = parser.nextToken();
      if (first == null) {
        return Optional.empty();
      }
      return Optional.of(JSON.readValue(parser, Object.class));
    } catch (JsonProcessingException e) {
      throw new InvalidProxyConfigException(
          "policy on standard input: " + ProxyConfigs.describe(e));
    } catch (IOException e) {
      throw new InvalidProxyConfigException(
          "reading the policy on standard input failed: " + Echo.of(e.getMessage()), e);
    }
  }

  /** Fails a read once more than {@link #MAX_BYTES} came through. */
  private static final class Capped extends FilterInputStream {
    private long total;

    Capped(InputStream in) {
      super(in);
    }

    @Override
    public int read() throws IOException {
      int b = super.read();
      if (b >= 0) {
        count(1);
      }
      return b;
    }

    @Override
    public int read(byte[] buffer, int offset, int length) throws IOException {
      int n = super.read(buffer, offset, length);
      if (n > 0) {
        count(n);
      }
      return n;
    }

    private void count(int n) throws IOException {
      total += n;
      if (total > MAX_BYTES) {
        throw new IOException(
            "more than " + MAX_BYTES + " bytes arrived (no policy is that large)");
      }
    }
  }
}
