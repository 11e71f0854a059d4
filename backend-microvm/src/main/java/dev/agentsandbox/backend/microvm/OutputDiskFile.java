package dev.agentsandbox.backend.microvm;

import dev.agentsandbox.backend.SandboxException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * A run's output disk as a file in the run's directory: made for the VMM before it starts, read
 * back once the VM has stopped. The disk is the guest's to write, so {@link OutputDisk} reads it as
 * hostile and writes a fresh archive; it is opened without following links, and only as the regular
 * file the backend created in the run's directory (which the VMM's uid cannot write).
 */
final class OutputDiskFile {
  private static final System.Logger LOG = System.getLogger(OutputDiskFile.class.getName());

  private OutputDiskFile() {}

  /** A sparse file of {@code bytes}, the VMM's ({@code vmmUid}) to write and nobody else's. */
  static void create(Path disk, long bytes, int vmmUid) throws IOException {
    Files.createFile(
        disk, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    try (FileChannel channel = FileChannel.open(disk, StandardOpenOption.WRITE)) {
      // One byte at the end makes the file its full size without allocating the rest.
      channel.write(ByteBuffer.allocate(1), bytes - 1);
    }
    Files.setAttribute(disk, "unix:uid", vmmUid);
  }

  /**
   * The guest's {@code /workspace/out} from {@code disk}, at most {@code readLimit} bytes of it.
   *
   * @throws SandboxException when the disk is not the regular file made for it or cannot be read
   */
  static InputStream read(String runId, Path disk, long readLimit) {
    FileChannel channel = null;
    try {
      if (!Files.isRegularFile(disk, LinkOption.NOFOLLOW_LINKS)) {
        throw new IOException("not a regular file");
      }
      channel = FileChannel.open(disk, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS);
      // Only as much as the disk was made (a VMM that grew the file gains nothing by it), and no
      // more than the run's caps can keep (RunContract.outArchiveLimit).
      OutputDisk.Listing listing = OutputDisk.list(channel, OutputDisk.MAX_ENTRIES, readLimit);
      listing
          .stopped()
          .ifPresent(
              why ->
                  LOG.log(
                      System.Logger.Level.WARNING,
                      "run {0}: reading its output disk stopped early, at {1}; the {2} entries"
                          + " before are kept",
                      runId,
                      why,
                      listing.entries().size()));
      return OutputDisk.archive(channel, listing);
    } catch (IOException e) {
      closeQuietly(channel);
      throw new SandboxException(
          "reading the outputs of run "
              + runId
              + " from "
              + disk
              + ": "
              + e.getMessage()
              + " (the guest may not have written them)",
          e);
    }
  }

  private static void closeQuietly(FileChannel channel) {
    if (channel != null) {
      try {
        channel.close();
      } catch (IOException ignored) {
        // Already failing with the reason that matters.
      }
    }
  }
}
