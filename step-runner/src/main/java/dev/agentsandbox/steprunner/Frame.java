package dev.agentsandbox.steprunner;

import java.util.Objects;

/**
 * One frame: its type, the channel (step or file operation) it belongs to, and its payload.
 *
 * @param type what it is
 * @param id the channel: 0 for the session itself, else the id the host gave an operation
 * @param payload at most {@link #MAX_PAYLOAD} bytes
 */
record Frame(FrameType type, int id, byte[] payload) {
  /** The header: payload length (u32), type (u8), channel id (u32), all big-endian. */
  static final int HEADER_BYTES = 9;

  /** The largest payload either side sends or accepts. */
  static final int MAX_PAYLOAD = 65536;

  Frame {
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(payload, "payload");
    if (payload.length > MAX_PAYLOAD) {
      throw new IllegalArgumentException("payload over " + MAX_PAYLOAD + " bytes");
    }
  }

  /** The frame as bytes on the wire. */
  byte[] encode() {
    byte[] bytes = new byte[HEADER_BYTES + payload.length];
    int length = payload.length;
    bytes[0] = (byte) (length >>> 24);
    bytes[1] = (byte) (length >>> 16);
    bytes[2] = (byte) (length >>> 8);
    bytes[3] = (byte) length;
    bytes[4] = (byte) type.code;
    bytes[5] = (byte) (id >>> 24);
    bytes[6] = (byte) (id >>> 16);
    bytes[7] = (byte) (id >>> 8);
    bytes[8] = (byte) id;
    System.arraycopy(payload, 0, bytes, HEADER_BYTES, payload.length);
    return bytes;
  }

  @Override
  public String toString() {
    return type + "#" + Integer.toUnsignedString(id) + "(" + payload.length + " bytes)";
  }
}
