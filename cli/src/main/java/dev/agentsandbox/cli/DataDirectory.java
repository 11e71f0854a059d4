package dev.agentsandbox.cli;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.Optional;
import java.util.Set;

/**
 * The control plane's data directory: the SQLite store, the first admin token, kept artifacts and
 * their spool. Created 0700 (every file in it is created 0600 by what writes it); one that already
 * exists is left as it is, since it may be the operator's own folder, but a start says when others
 * may read it.
 */
final class DataDirectory {
  private static final Set<PosixFilePermission> OTHERS =
      EnumSet.of(
          PosixFilePermission.GROUP_READ,
          PosixFilePermission.GROUP_WRITE,
          PosixFilePermission.GROUP_EXECUTE,
          PosixFilePermission.OTHERS_READ,
          PosixFilePermission.OTHERS_WRITE,
          PosixFilePermission.OTHERS_EXECUTE);

  private DataDirectory() {}

  /**
   * Creates {@code dir} (and missing parents) 0700 when it is missing.
   *
   * @return a warning to print when it existed and its group or others may enter or read it
   */
  static Optional<String> prepare(Path dir) {
    try {
      if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
        Files.createDirectories(
            dir,
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        return Optional.empty();
      }
      Set<PosixFilePermission> mode = Files.getPosixFilePermissions(dir);
      if (mode.stream().anyMatch(OTHERS::contains)) {
        return Optional.of(
            "warning: the data directory "
                + dir.toAbsolutePath()
                + " is "
                + PosixFilePermissions.toString(mode)
                + ": other local users may read what is not 0600 in it (chmod 700 "
                + dir.toAbsolutePath()
                + ")");
      }
      return Optional.empty();
    } catch (UnsupportedOperationException e) {
      return Optional.empty(); // no POSIX modes on this file system: nothing to narrow
    } catch (IOException e) {
      throw new UncheckedIOException(
          "create the data directory " + dir.toAbsolutePath() + ": " + e.getMessage(), e);
    }
  }
}
