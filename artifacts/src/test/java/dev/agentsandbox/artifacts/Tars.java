package dev.agentsandbox.artifacts;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;

/** Builds tar archives in memory, hostile ones included, as a sandbox's archive API returns. */
final class Tars {
  private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
  private final TarArchiveOutputStream tar = new TarArchiveOutputStream(bytes);

  Tars() {
    tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
  }

  Tars dir(String name) throws IOException {
    tar.putArchiveEntry(new TarArchiveEntry(name.endsWith("/") ? name : name + "/"));
    tar.closeArchiveEntry();
    return this;
  }

  Tars file(String name, String content) throws IOException {
    return file(name, content.getBytes(StandardCharsets.UTF_8));
  }

  Tars file(String name, byte[] content) throws IOException {
    TarArchiveEntry e = new TarArchiveEntry(name, true);
    e.setSize(content.length);
    tar.putArchiveEntry(e);
    tar.write(content);
    tar.closeArchiveEntry();
    return this;
  }

  Tars special(String name, byte flag, String linkTarget) throws IOException {
    TarArchiveEntry e = new TarArchiveEntry(name, flag, true);
    if (linkTarget != null) {
      e.setLinkName(linkTarget);
    }
    tar.putArchiveEntry(e);
    tar.closeArchiveEntry();
    return this;
  }

  Tars symlink(String name, String target) throws IOException {
    return special(name, TarConstants.LF_SYMLINK, target);
  }

  byte[] bytes() throws IOException {
    tar.finish();
    tar.close();
    return bytes.toByteArray();
  }
}
