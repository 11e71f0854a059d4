package dev.agentsandbox.bench;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/**
 * Reads HTTP message heads from a stream in buffered chunks, keeping what arrives after a head for
 * the body or the next message.
 *
 * <p>Reading a byte at a time would add one system call per header byte to every measured latency,
 * and more for a proxy that sends longer headers; chunked reads keep the client's cost the same for
 * every proxy.
 */
final class HeadReader {
  private static final int MAX_HEAD = 64 * 1024;
  private final InputStream in;
  private byte[] buffer = new byte[8192];
  private int start;
  private int end;

  HeadReader(InputStream in) {
    this.in = in;
  }

  /**
   * The next head up to but excluding the blank line, or null if the stream ended cleanly before
   * any byte of it.
   */
  String readHead() throws IOException {
    while (true) {
      // Heads are small, so rescanning from the start after each read costs nothing worth
      // the bookkeeping of a resume index that compaction would move.
      for (int i = start + 3; i < end; i++) {
        if (buffer[i] == '\n'
            && buffer[i - 1] == '\r'
            && buffer[i - 2] == '\n'
            && buffer[i - 3] == '\r') {
          String head = new String(buffer, start, i - 3 - start, StandardCharsets.ISO_8859_1);
          start = i + 1;
          return head;
        }
      }
      if (end - start >= MAX_HEAD) {
        throw new IOException("message head longer than " + MAX_HEAD + " bytes");
      }
      if (!fill()) {
        if (end == start) {
          return null;
        }
        throw new EOFException("stream ended inside a message head");
      }
    }
  }

  /** Consumes exactly {@code count} body bytes. */
  void skip(long count) throws IOException {
    long left = count;
    while (left > 0) {
      if (start == end && !fill()) {
        throw new EOFException("stream ended with " + left + " body bytes missing");
      }
      int take = (int) Math.min(left, end - start);
      start += take;
      left -= take;
    }
  }

  /** Bytes read past the last head or body that nobody consumed yet. */
  int buffered() {
    return end - start;
  }

  private boolean fill() throws IOException {
    if (start == end) {
      start = 0;
      end = 0;
    } else if (end == buffer.length) {
      if (start > 0) {
        System.arraycopy(buffer, start, buffer, 0, end - start);
        end -= start;
        start = 0;
      } else {
        byte[] grown = new byte[buffer.length * 2];
        System.arraycopy(buffer, 0, grown, 0, end);
        buffer = grown;
      }
    }
    int read = in.read(buffer, end, buffer.length - end);
    if (read < 0) {
      return false;
    }
    end += read;
    return true;
  }
}
