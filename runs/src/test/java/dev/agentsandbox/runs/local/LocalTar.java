package dev.agentsandbox.runs.local;

import dev.agentsandbox.backend.session.ArchiveWritten;
import dev.agentsandbox.backend.session.PathRefusedException;
import dev.agentsandbox.backend.session.PathRefusedException.Reason;
import dev.agentsandbox.backend.session.UnableToRunStepException;
import dev.agentsandbox.backend.session.WorkspacePath;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/** Tar archives in and out of a {@link LocalWorkspace}, links never followed nor written. */
final class LocalTar {
  private LocalTar() {}

  interface FileWriter {
    long write(WorkspacePath path, InputStream content, long maxBytes);
  }

  static ArchiveWritten extract(
      LocalWorkspace workspace,
      WorkspacePath folder,
      InputStream tar,
      long maxBytes,
      FileWriter files) {
    int written = 0;
    int folders = 0;
    long bytes = 0;
    try (TarArchiveInputStream in = new TarArchiveInputStream(tar)) {
      TarArchiveEntry entry;
      while ((entry = in.getNextEntry()) != null) {
        String name =
            entry.getName().startsWith("./") ? entry.getName().substring(2) : entry.getName();
        if (name.endsWith("/")) {
          name = name.substring(0, name.length() - 1);
        }
        if (name.isEmpty() || name.equals(".")) {
          continue;
        }
        WorkspacePath path = folder.resolve(WorkspacePath.parse(name));
        if (entry.isDirectory()) {
          workspace.folder(path, true);
          folders++;
        } else if (entry.isFile()) {
          bytes += files.write(path, in, maxBytes - bytes);
          if ((entry.getMode() & 0100) != 0) {
            Path host = workspace.folder(path.parent(), false).resolve(path.name());
            Files.setPosixFilePermissions(host, LocalWorkspace.MODE_EXECUTABLE);
          }
          written++;
        } else {
          throw new PathRefusedException(path, Reason.NOT_REGULAR, "not a file or a folder");
        }
      }
    } catch (IOException e) {
      throw new UnableToRunStepException("extract into " + folder + ": " + e.getMessage(), e);
    }
    return new ArchiveWritten(written, folders, bytes);
  }

  /**
   * Writes {@code folder}'s regular files and folders as a tar, names relative to it (under {@code
   * top} when given); returns what was left out. Refused before the first byte when its files add
   * up to more than {@code maxBytes}.
   */
  static List<String> write(Path folder, String top, OutputStream out, long maxBytes) {
    List<String> skipped = new ArrayList<>();
    List<Path> kept = new ArrayList<>();
    long total = 0;
    try (Stream<Path> all = Files.walk(folder)) {
      for (Path p : all.sorted().toList()) {
        if (p.equals(folder)) {
          continue;
        }
        BasicFileAttributes a =
            Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        if (a.isRegularFile()) {
          total += a.size();
          kept.add(p);
        } else if (a.isDirectory()) {
          kept.add(p);
        } else if (skipped.size() < 1000) {
          skipped.add(folder.relativize(p).toString());
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    if (total > maxBytes) {
      throw new PathRefusedException(
          WorkspacePath.root(), Reason.TOO_LARGE, "its files add up to " + total + " bytes");
    }
    try (TarArchiveOutputStream tar = new TarArchiveOutputStream(new NoClose(out))) {
      tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
      if (top != null) {
        tar.putArchiveEntry(new TarArchiveEntry(top + "/"));
        tar.closeArchiveEntry();
      }
      for (Path p : kept) {
        String name = (top == null ? "" : top + "/") + folder.relativize(p);
        if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
          tar.putArchiveEntry(new TarArchiveEntry(name + "/"));
          tar.closeArchiveEntry();
        } else {
          TarArchiveEntry e = new TarArchiveEntry(name);
          e.setSize(Files.size(p));
          tar.putArchiveEntry(e);
          try (InputStream in = Files.newInputStream(p, LinkOption.NOFOLLOW_LINKS)) {
            in.transferTo(tar);
          }
          tar.closeArchiveEntry();
        }
      }
      tar.finish();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return skipped;
  }

  static byte[] empty() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (TarArchiveOutputStream tar = new TarArchiveOutputStream(bytes)) {
      tar.finish();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  /** Lets the tar writer finish without closing the caller's stream. */
  private static final class NoClose extends java.io.FilterOutputStream {
    NoClose(OutputStream out) {
      super(out);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      out.write(b, off, len);
    }

    @Override
    public void close() throws IOException {
      flush();
    }
  }
}
