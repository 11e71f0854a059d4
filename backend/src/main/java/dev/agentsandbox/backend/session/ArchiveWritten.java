package dev.agentsandbox.backend.session;

/**
 * What extracting an archive into the workspace wrote.
 *
 * @param files regular files written
 * @param folders folders created
 * @param bytes bytes of file content written
 */
public record ArchiveWritten(int files, int folders, long bytes) {}
