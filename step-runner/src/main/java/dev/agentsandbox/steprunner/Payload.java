package dev.agentsandbox.steprunner;

import dev.agentsandbox.backend.session.WorkspacePath;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** The fields of a payload: big-endian integers and length-prefixed UTF-8 strings. */
final class Payload {
  private Payload() {}

  /** Builds a payload the host sends; refuses to grow past {@link Frame#MAX_PAYLOAD}. */
  static final class Writer {
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();

    Writer u32(long value) {
      bytes.write((int) (value >>> 24));
      bytes.write((int) (value >>> 16));
      bytes.write((int) (value >>> 8));
      bytes.write((int) value);
      return this;
    }

    Writer u64(long value) {
      return u32(value >>> 32).u32(value);
    }

    Writer str(String value) {
      byte[] utf8 = value.getBytes(StandardCharsets.UTF_8);
      u32(utf8.length);
      bytes.writeBytes(utf8);
      return this;
    }

    Writer path(WorkspacePath path) {
      List<String> segments = path.segments();
      u32(segments.size());
      segments.forEach(this::str);
      return this;
    }

    byte[] done() {
      if (bytes.size() > Frame.MAX_PAYLOAD) {
        throw new IllegalArgumentException(
            "the request is over "
                + Frame.MAX_PAYLOAD
                + " bytes (a command or environment too large)");
      }
      return bytes.toByteArray();
    }
  }

  /** Reads a payload the runner sent; every overrun or leftover is a protocol violation. */
  static final class Reader {
    private final Frame frame;
    private int at;

    Reader(Frame frame) {
      this.frame = frame;
    }

    long u32() {
      byte[] p = frame.payload();
      if (p.length - at < 4) {
        throw short_();
      }
      long value =
          (p[at] & 0xffL) << 24
              | (p[at + 1] & 0xffL) << 16
              | (p[at + 2] & 0xffL) << 8
              | (p[at + 3] & 0xffL);
      at += 4;
      return value;
    }

    long u64() {
      long value = u32() << 32 | u32();
      if (value < 0) {
        throw new ProtocolViolationException(frame + " holds a size over 2^63");
      }
      return value;
    }

    String str(int maxBytes) {
      long length = u32();
      if (length > maxBytes || length > frame.payload().length - at) {
        throw new ProtocolViolationException(
            frame + " holds a string of " + length + " bytes (at most " + maxBytes + ")");
      }
      String value = new String(frame.payload(), at, (int) length, StandardCharsets.UTF_8);
      at += (int) length;
      return value;
    }

    /** Every byte was read: a frame with more than its fields is not one the runner sends. */
    void end() {
      if (at != frame.payload().length) {
        throw new ProtocolViolationException(
            frame + " has " + (frame.payload().length - at) + " bytes past its fields");
      }
    }

    private ProtocolViolationException short_() {
      throw new ProtocolViolationException(frame + " is shorter than its fields");
    }
  }
}
