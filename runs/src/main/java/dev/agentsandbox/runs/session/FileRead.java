package dev.agentsandbox.runs.session;

import dev.agentsandbox.backend.session.PathInfo;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * What a {@code GET .../files} read out of a session, already whole on the control plane (a private
 * temporary file, mode 0600) so that its size and SHA-256 are known, and its audit row written,
 * before the first byte is answered. Close it once sent: the temporary file is deleted.
 */
public sealed interface FileRead extends AutoCloseable {
  /** Where, as the workload sees it. */
  String path();

  @Override
  void close();

  /**
   * A regular file's bytes, or a folder's tar.
   *
   * @param tar whether this is a folder's tar (else a regular file's bytes)
   * @param size how many bytes
   * @param sha256 their SHA-256, lower-case hex
   * @param skipped for a tar: how many links and special files were left out
   */
  record Bytes(String path, boolean tar, Path spool, long size, String sha256, int skipped)
      implements FileRead {
    public Bytes {
      Objects.requireNonNull(path, "path");
      Objects.requireNonNull(spool, "spool");
      Objects.requireNonNull(sha256, "sha256");
    }

    /** The bytes, from the start. */
    public InputStream open() {
      try {
        return Files.newInputStream(spool);
      } catch (IOException e) {
        throw new UncheckedIOException("open the spooled copy of " + path, e);
      }
    }

    @Override
    public void close() {
      try {
        Files.deleteIfExists(spool);
      } catch (IOException e) {
        throw new UncheckedIOException("delete the spooled copy of " + path, e);
      }
    }
  }

  /**
   * A folder's listing.
   *
   * @param entries its entries in name order, links listed as links
   * @param truncated whether it holds more than were listed
   */
  record Listing(String path, List<PathInfo> entries, boolean truncated) implements FileRead {
    public Listing {
      Objects.requireNonNull(path, "path");
      entries = List.copyOf(entries);
    }

    @Override
    public void close() {}
  }
}
