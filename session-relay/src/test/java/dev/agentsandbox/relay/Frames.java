package dev.agentsandbox.relay;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** Step runner frames written by hand (docs/step-runner.md), as an attacker would send them. */
final class Frames {
  private Frames() {}

  /** An EXEC of {@code argv} in the workspace on channel {@code id}, then its STDIN_END. */
  static byte[] exec(int id, List<String> argv) {
    ByteArrayOutputStream payload = new ByteArrayOutputStream();
    u32(payload, argv.size());
    for (String arg : argv) {
      byte[] bytes = arg.getBytes(StandardCharsets.UTF_8);
      u32(payload, bytes.length);
      payload.writeBytes(bytes);
    }
    u32(payload, 0); // no variables
    u32(payload, 0); // cwd: the workspace
    ByteArrayOutputStream frames = new ByteArrayOutputStream();
    frame(frames, 0x01, id, payload.toByteArray());
    frame(frames, 0x03, id, new byte[0]);
    return frames.toByteArray();
  }

  private static void frame(ByteArrayOutputStream out, int type, int id, byte[] payload) {
    out.writeBytes(
        ByteBuffer.allocate(9).putInt(payload.length).put((byte) type).putInt(id).array());
    out.writeBytes(payload);
  }

  private static void u32(ByteArrayOutputStream out, int value) {
    out.writeBytes(ByteBuffer.allocate(4).putInt(value).array());
  }
}
