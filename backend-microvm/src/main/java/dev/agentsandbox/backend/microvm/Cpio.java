package dev.agentsandbox.backend.microvm;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * Writes a {@code newc} cpio archive, the format the Linux kernel unpacks as an initramfs. Entries
 * are owned by root with a fixed mtime, so the same inputs give the same bytes. Not thread-safe.
 */
final class Cpio {
  private static final int DIRECTORY = 0040000;
  private static final int REGULAR = 0100000;
  private static final int SYMLINK = 0120000;
  private static final int CHAR_DEVICE = 0020000;

  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private int inode = 1;

  Cpio directory(String path, int permissions) {
    entry(path, DIRECTORY | permissions, new byte[0], 0, 0);
    return this;
  }

  Cpio file(String path, int permissions, byte[] content) {
    entry(path, REGULAR | permissions, content, 0, 0);
    return this;
  }

  Cpio symlink(String path, String target) {
    entry(path, SYMLINK | 0777, target.getBytes(StandardCharsets.UTF_8), 0, 0);
    return this;
  }

  Cpio charDevice(String path, int permissions, int major, int minor) {
    entry(path, CHAR_DEVICE | permissions, new byte[0], major, minor);
    return this;
  }

  /** The archive with its trailer. */
  byte[] finish() {
    entry("TRAILER!!!", 0, new byte[0], 0, 0);
    return out.toByteArray();
  }

  private void entry(String path, int mode, byte[] content, int rdevMajor, int rdevMinor) {
    byte[] name = (path + "\0").getBytes(StandardCharsets.UTF_8);
    int links = (mode & DIRECTORY) == DIRECTORY ? 2 : 1;
    String header =
        "070701"
            + hex(mode == 0 ? 0 : inode++)
            + hex(mode)
            + hex(0)
            + hex(0)
            + hex(links)
            + hex(0)
            + hex(content.length)
            + hex(0)
            + hex(0)
            + hex(rdevMajor)
            + hex(rdevMinor)
            + hex(name.length)
            + hex(0);
    out.writeBytes(header.getBytes(StandardCharsets.US_ASCII));
    out.writeBytes(name);
    pad();
    out.writeBytes(content);
    pad();
  }

  private void pad() {
    while (out.size() % 4 != 0) {
      out.write(0);
    }
  }

  private static String hex(int value) {
    return String.format("%08x", value);
  }
}
