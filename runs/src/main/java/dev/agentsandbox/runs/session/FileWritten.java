package dev.agentsandbox.runs.session;

import java.util.Objects;

/**
 * What a {@code PUT .../files} wrote into a session's workspace.
 *
 * @param path where, as the workload sees it ({@code /workspace/...})
 * @param folder whether a tar was extracted under a folder (else one file was written)
 * @param size the bytes that crossed: the file's, or the archive's as sent
 * @param sha256 the SHA-256 of those bytes, lower-case hex
 * @param files regular files written (1 for a file)
 * @param folders folders created or named by the archive (0 for a file)
 * @param bytes bytes of file content written
 */
public record FileWritten(
    String path, boolean folder, long size, String sha256, int files, int folders, long bytes) {
  public FileWritten {
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(sha256, "sha256");
  }
}
