package dev.agentsandbox.artifacts;

import dev.agentsandbox.artifacts.CollectedOutputs.Reason;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;

/**
 * Checks a tar archive a client sends into a session's workspace, whole, before anything of it is
 * written (docs/api.md, "Files"). It is read as hostile by the rules a sandbox's outputs are read
 * by ({@link EntryRules}, {@link ArtifactPath}): only regular files and folders; names relative,
 * without {@code ..}, {@code .} or empty segments, control characters or backslashes; no symbolic
 * or hard links, devices, fifos, sparse or vendor entries; no name twice and no file where a folder
 * is; every entry's content as long as it declares; at most {@value #MAX_ENTRIES} entries and the
 * caller's byte cap. Unlike outputs, where what breaks a rule is dropped and the rest kept, one bad
 * entry here refuses the archive: a half-extracted project is worse than none.
 *
 * <p>A leading {@code ./} (what {@code tar -C dir -cf - .} writes) is taken off each name, and the
 * {@code ./} entry itself is the folder the archive is extracted under. Stateless and thread-safe.
 */
public final class InboundArchive {
  /** The most entries an archive may hold. */
  public static final int MAX_ENTRIES = 100_000;

  private InboundArchive() {}

  /**
   * What a checked archive holds.
   *
   * @param files regular files
   * @param folders folders named in the archive (beside those its files' names imply)
   * @param bytes the files' content in all
   */
  public record Checked(int files, int folders, long bytes) {}

  /**
   * Reads the archive at {@code tar} through and checks every entry.
   *
   * @param maxBytes the most bytes of file content it may hold
   * @throws InvalidInboundArchiveException naming the first entry that breaks a rule, or saying the
   *     file is not a tar archive
   * @throws IOException when the file cannot be read
   */
  public static Checked check(Path tar, long maxBytes) throws IOException {
    Set<String> files = new HashSet<>();
    Set<String> folders = new HashSet<>();
    int fileCount = 0;
    int folderCount = 0;
    long bytes = 0;
    int entries = 0;
    try (InputStream raw = Files.newInputStream(tar);
        TarArchiveInputStream in = new TarArchiveInputStream(raw)) {
      TarArchiveEntry entry;
      while ((entry = next(in)) != null) {
        if (++entries > MAX_ENTRIES) {
          throw refused(
              "(entry " + entries + ")",
              Reason.OVER_COUNT_CAP,
              "more than " + MAX_ENTRIES + " entries");
        }
        String raw0 = entry.getName();
        String name = raw0.startsWith("./") ? raw0.substring(2) : raw0;
        if (name.endsWith("/")) {
          name = name.substring(0, name.length() - 1);
        }
        if (entry.isDirectory() && (name.isEmpty() || name.equals("."))) {
          continue; // the folder the archive goes under
        }
        Optional<String> problem = ArtifactPath.problem(name);
        if (problem.isPresent()) {
          throw refused(raw0, Reason.INVALID_PATH, problem.get());
        }
        if (entry.isDirectory()) {
          if (files.contains(name) || EntryRules.parentIsFile(name, files)) {
            throw refused(raw0, Reason.CONFLICT, "a folder where a file of the archive is");
          }
          if (folders.add(name)) {
            folderCount++;
          }
          continue;
        }
        Reason type = EntryRules.typeRefusal(entry);
        if (type != null) {
          throw refused(raw0, type, "only regular files and folders are extracted");
        }
        if (files.contains(name)
            || folders.contains(name)
            || EntryRules.parentIsFile(name, files)) {
          throw refused(
              raw0, Reason.CONFLICT, "a second entry of a name, or a file where a folder is");
        }
        for (int slash = name.indexOf('/'); slash > 0; slash = name.indexOf('/', slash + 1)) {
          folders.add(name.substring(0, slash));
        }
        if (entry.getSize() < 0 || bytes + entry.getSize() > maxBytes) {
          throw refused(
              raw0,
              Reason.OVER_SIZE_CAP,
              "the archive's files add up to more than " + maxBytes + " bytes");
        }
        long read;
        try {
          read = in.transferTo(OutputStream.nullOutputStream());
        } catch (IOException e) {
          read = -1;
        }
        if (read != entry.getSize()) {
          throw refused(
              raw0, Reason.TRUNCATED, "the archive ends before the entry's declared length");
        }
        files.add(name);
        fileCount++;
        bytes += read;
      }
    }
    return new Checked(fileCount, folderCount, bytes);
  }

  private static TarArchiveEntry next(TarArchiveInputStream in) throws IOException {
    try {
      return in.getNextEntry();
    } catch (IOException | IllegalArgumentException e) {
      // commons-compress says why a header does not parse; the archive is the client's, so only
      // the kind of problem is named.
      throw new InvalidInboundArchiveException(
          "(archive)",
          Optional.empty(),
          "not a readable tar archive (" + e.getClass().getSimpleName() + ")");
    }
  }

  private static InvalidInboundArchiveException refused(String entry, Reason reason, String why) {
    String shown = EntryRules.shown(entry);
    return new InvalidInboundArchiveException(
        shown,
        Optional.of(reason),
        "entry " + shown + " is refused (" + reason.wireName() + "): " + why);
  }
}
