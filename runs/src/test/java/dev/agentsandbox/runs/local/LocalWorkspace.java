package dev.agentsandbox.runs.local;

import dev.agentsandbox.backend.session.PathInfo;
import dev.agentsandbox.backend.session.PathRefusedException;
import dev.agentsandbox.backend.session.PathRefusedException.Reason;
import dev.agentsandbox.backend.session.WorkspacePath;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.util.Set;

/**
 * A host folder standing in for a session's {@code /workspace}, resolved one segment at a time
 * without following a link, as the SPI asks of every backend. This is a test double: it runs on the
 * test's own host, and checking each segment before using it leaves the race a real backend must
 * not have (a workload swapping a folder for a link in between); only tests' own commands run in
 * it.
 */
final class LocalWorkspace {
  private final Path root;

  LocalWorkspace(Path root) {
    this.root = root;
  }

  Path root() {
    return root;
  }

  /** What is at {@code path}, each folder on the way checked to be a folder and no link. */
  PathInfo stat(WorkspacePath path) {
    Path at = folder(path.isRoot() ? path : path.parent(), false);
    Path target = path.isRoot() ? root : at.resolve(path.name());
    BasicFileAttributes attributes = attributes(path, target);
    return info(path, attributes, target);
  }

  /**
   * The host folder of {@code path}: every segment a folder, none a link; made when {@code create}.
   */
  Path folder(WorkspacePath path, boolean create) {
    Path at = root;
    WorkspacePath walked = WorkspacePath.root();
    for (String segment : path.segments()) {
      at = at.resolve(segment);
      walked = walked.resolve(new WorkspacePath(java.util.List.of(segment)));
      BasicFileAttributes attributes;
      try {
        attributes = Files.readAttributes(at, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
      } catch (NoSuchFileException e) {
        if (!create) {
          throw new PathRefusedException(path, Reason.NOT_FOUND, walked + " does not exist");
        }
        try {
          Files.createDirectory(at);
          Files.setPosixFilePermissions(at, MODE_FOLDER);
          continue;
        } catch (IOException made) {
          throw new UncheckedIOException(made);
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      if (attributes.isSymbolicLink()) {
        throw new PathRefusedException(path, Reason.SYMLINK, walked + " is a symbolic link");
      }
      if (!attributes.isDirectory()) {
        throw new PathRefusedException(path, Reason.WRONG_KIND, walked + " is not a folder");
      }
    }
    return at;
  }

  static final Set<PosixFilePermission> MODE_FOLDER =
      java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x");
  static final Set<PosixFilePermission> MODE_FILE =
      java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--");
  static final Set<PosixFilePermission> MODE_EXECUTABLE =
      java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x");

  static BasicFileAttributes attributes(WorkspacePath path, Path target) {
    try {
      return Files.readAttributes(target, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    } catch (NoSuchFileException e) {
      throw new PathRefusedException(path, Reason.NOT_FOUND, path + " does not exist");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static PathInfo info(WorkspacePath path, BasicFileAttributes a, Path target) {
    PathInfo.Kind kind =
        a.isSymbolicLink()
            ? PathInfo.Kind.SYMLINK
            : a.isDirectory()
                ? PathInfo.Kind.FOLDER
                : a.isRegularFile() ? PathInfo.Kind.FILE : PathInfo.Kind.OTHER;
    int mode = 0;
    try {
      PosixFileAttributes posix =
          Files.readAttributes(target, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
      for (PosixFilePermission p : posix.permissions()) {
        mode |= 1 << (8 - p.ordinal());
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return new PathInfo(
        path,
        kind,
        kind == PathInfo.Kind.FILE ? a.size() : 0,
        mode,
        a.lastModifiedTime().toInstant());
  }
}
