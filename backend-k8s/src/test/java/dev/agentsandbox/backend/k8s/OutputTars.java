package dev.agentsandbox.backend.k8s;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.HexFormat;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;

/** Builds tars of an out folder, honest or hostile, and frames them as the sidecar does. */
final class OutputTars {
  private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
  private final TarArchiveOutputStream tar = new TarArchiveOutputStream(bytes);

  OutputTars() {
    tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
  }

  OutputTars folder(String name) {
    return entry(new TarArchiveEntry(name.endsWith("/") ? name : name + "/"), new byte[0]);
  }

  OutputTars file(String name, String content) {
    return file(name, content.getBytes(StandardCharsets.UTF_8));
  }

  OutputTars file(String name, byte[] content) {
    TarArchiveEntry entry = new TarArchiveEntry(name, true);
    entry.setSize(content.length);
    return entry(entry, content);
  }

  OutputTars symlink(String name, String target) {
    TarArchiveEntry entry = new TarArchiveEntry(name, TarConstants.LF_SYMLINK, true);
    entry.setLinkName(target);
    return entry(entry, new byte[0]);
  }

  OutputTars hardlink(String name, String target) {
    TarArchiveEntry entry = new TarArchiveEntry(name, TarConstants.LF_LINK, true);
    entry.setLinkName(target);
    return entry(entry, new byte[0]);
  }

  OutputTars device(String name) {
    TarArchiveEntry entry = new TarArchiveEntry(name, TarConstants.LF_CHR, true);
    entry.setDevMajor(1);
    entry.setDevMinor(3);
    return entry(entry, new byte[0]);
  }

  OutputTars fifo(String name) {
    return entry(new TarArchiveEntry(name, TarConstants.LF_FIFO, true), new byte[0]);
  }

  private OutputTars entry(TarArchiveEntry entry, byte[] content) {
    try {
      tar.putArchiveEntry(entry);
      tar.write(content);
      tar.closeArchiveEntry();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return this;
  }

  byte[] bytes() {
    try {
      tar.finish();
      tar.close();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  /** The sidecar's log for {@code tar}: begin line, 76-character base64 lines, end line. */
  static String frame(byte[] tar) {
    return OutputFrame.BEGIN + "\n" + base64Lines(tar) + endLine(tar.length, sha256(tar)) + "\n";
  }

  static String base64Lines(byte[] data) {
    String text = Base64.getEncoder().encodeToString(data);
    StringBuilder lines = new StringBuilder();
    for (int i = 0; i < text.length(); i += 76) {
      lines.append(text, i, Math.min(text.length(), i + 76)).append('\n');
    }
    return lines.toString();
  }

  static String endLine(long length, String sha256) {
    return OutputFrame.END + " " + length + " " + sha256;
  }

  static String sha256(byte[] data) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
