package dev.agentsandbox.cli;

import dev.agentsandbox.artifacts.InboundArchive;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.util.Set;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/**
 * Folders as tar archives on this machine, for {@code session cp}: a local folder packed (regular
 * files and folders, an executable's bit kept; links and special files left out and named), and a
 * session's folder unpacked. What comes out of a session is the workload's work and is read as
 * hostile: the archive is checked whole first by the rules the control plane reads outputs by
 * ({@link InboundArchive}), nothing is written through a link, and no name leaves the target.
 */
final class LocalArchive {
  private LocalArchive() {}

  /** Packs {@code folder}'s content into a temporary tar file; the caller deletes it. */
  static Path pack(Path folder, PrintWriter err) throws IOException {
    Path tar = Files.createTempFile("agent-sandbox-cp-", ".tar");
    try (OutputStream file = Files.newOutputStream(tar);
        TarArchiveOutputStream out = new TarArchiveOutputStream(file);
        Stream<Path> walk = Files.walk(folder)) {
      out.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
      out.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
      for (Path path : walk.sorted().toList()) {
        if (path.equals(folder)) {
          continue;
        }
        String name = folder.relativize(path).toString().replace('\\', '/');
        BasicFileAttributes a =
            Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        if (a.isDirectory()) {
          out.putArchiveEntry(new TarArchiveEntry(name + "/"));
          out.closeArchiveEntry();
        } else if (a.isRegularFile()) {
          TarArchiveEntry entry = new TarArchiveEntry(name);
          entry.setSize(a.size());
          Set<PosixFilePermission> mode =
              Files.getPosixFilePermissions(path, LinkOption.NOFOLLOW_LINKS);
          entry.setMode(mode.contains(PosixFilePermission.OWNER_EXECUTE) ? 0755 : 0644);
          out.putArchiveEntry(entry);
          try (InputStream in = Files.newInputStream(path, LinkOption.NOFOLLOW_LINKS)) {
            in.transferTo(out);
          }
          out.closeArchiveEntry();
        } else {
          err.println("agent-sandbox session cp: left out " + name + " (a link or special file)");
        }
      }
      out.finish();
    } catch (IOException | RuntimeException e) {
      Files.deleteIfExists(tar);
      throw e;
    }
    return tar;
  }

  /**
   * Unpacks the checked tar at {@code tar} into {@code target} (created when missing); returns how
   * many files it wrote.
   */
  static int unpack(Path tar, Path target) throws IOException {
    InboundArchive.check(tar, Long.MAX_VALUE);
    Files.createDirectories(target);
    Path root = target.toRealPath();
    int files = 0;
    try (InputStream raw = Files.newInputStream(tar);
        TarArchiveInputStream in = new TarArchiveInputStream(raw)) {
      TarArchiveEntry entry;
      while ((entry = in.getNextEntry()) != null) {
        String name =
            entry.getName().startsWith("./") ? entry.getName().substring(2) : entry.getName();
        if (name.isEmpty() || name.equals(".") || name.equals("./")) {
          continue;
        }
        Path at = root.resolve(name).normalize();
        if (!at.startsWith(root)) {
          throw new IOException("the archive names " + name + ", outside " + target);
        }
        refuseLinksOnTheWay(root, at);
        if (entry.isDirectory()) {
          Files.createDirectories(at);
          continue;
        }
        Files.createDirectories(at.getParent());
        Path part = Files.createTempFile(at.getParent(), ".cp-", ".part");
        try {
          try (OutputStream out = Files.newOutputStream(part)) {
            in.transferTo(out);
          }
          Files.move(part, at, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
          Files.deleteIfExists(part);
        }
        if ((entry.getMode() & 0100) != 0) {
          at.toFile().setExecutable(true, false);
        }
        files++;
      }
    }
    return files;
  }

  /** Refuses to write where a folder on the way, or the file itself, is a link. */
  private static void refuseLinksOnTheWay(Path root, Path at) throws IOException {
    Path walked = root;
    for (Path segment : root.relativize(at)) {
      walked = walked.resolve(segment);
      if (Files.isSymbolicLink(walked)) {
        throw new IOException(
            "unpack into " + root + ": " + walked + " is a link (nothing is written through one)");
      }
    }
  }
}
