package dev.agentsandbox.steprunner;

import java.util.function.Consumer;

/**
 * Cuts the runner's byte stream into frames. It holds at most one frame's bytes ({@link
 * Frame#HEADER_BYTES} + {@link Frame#MAX_PAYLOAD}) however the stream is chunked, and refuses a
 * header that announces more, or a type the runner never sends, before reading its payload. Not
 * thread-safe: one reader feeds it.
 */
final class FrameDecoder {
  private final Consumer<Frame> sink;
  private final byte[] header = new byte[Frame.HEADER_BYTES];
  private int headerHeld;
  private byte[] payload;
  private int payloadHeld;
  private FrameType type;
  private int id;

  FrameDecoder(Consumer<Frame> sink) {
    this.sink = sink;
  }

  /**
   * Feeds bytes as they came.
   *
   * @throws ProtocolViolationException at the first header that breaks the protocol
   */
  void feed(byte[] bytes, int offset, int length) {
    int at = offset;
    int end = offset + length;
    while (at < end) {
      if (payload == null) {
        int n = Math.min(Frame.HEADER_BYTES - headerHeld, end - at);
        System.arraycopy(bytes, at, header, headerHeld, n);
        headerHeld += n;
        at += n;
        if (headerHeld == Frame.HEADER_BYTES) {
          startPayload();
        }
      } else {
        int n = Math.min(payload.length - payloadHeld, end - at);
        System.arraycopy(bytes, at, payload, payloadHeld, n);
        payloadHeld += n;
        at += n;
      }
      if (payload != null && payloadHeld == payload.length) {
        Frame frame = new Frame(type, id, payload);
        payload = null;
        headerHeld = 0;
        sink.accept(frame);
      }
    }
  }

  private void startPayload() {
    long length = Integer.toUnsignedLong(readInt(0));
    if (length > Frame.MAX_PAYLOAD) {
      throw new ProtocolViolationException(
          "a frame announces " + length + " bytes, over the limit of " + Frame.MAX_PAYLOAD);
    }
    int code = header[4] & 0xff;
    type =
        FrameType.fromRunner(code)
            .orElseThrow(
                () ->
                    new ProtocolViolationException(
                        "a frame of unknown type 0x" + Integer.toHexString(code)));
    id = readInt(5);
    payload = new byte[(int) length];
    payloadHeld = 0;
  }

  private int readInt(int at) {
    return (header[at] & 0xff) << 24
        | (header[at + 1] & 0xff) << 16
        | (header[at + 2] & 0xff) << 8
        | (header[at + 3] & 0xff);
  }
}
