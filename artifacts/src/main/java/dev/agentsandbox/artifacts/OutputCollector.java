package dev.agentsandbox.artifacts;

import dev.agentsandbox.artifacts.CollectedOutputs.Dropped;
import dev.agentsandbox.artifacts.CollectedOutputs.Reason;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;

/**
 * Keeps a run's outputs from a tar archive of its output folder (what Docker's archive API returns
 * for {@code /workspace/out}, what the microVM backend reads off the VM's disk) in an {@link
 * ArtifactStore}.
 *
 * <p>The archive is the workload's work and is read as hostile: only regular files are kept; links,
 * devices and pipes are named as dropped and never followed; a name outside the folder or one that
 * {@link ArtifactPath} refuses is dropped; the caps are applied in archive order (what fits is
 * kept, the rest named as dropped); no more than {@value #MAX_ENTRIES_READ} entries are read, so an
 * archive of a million empty files cannot keep the control plane busy. Each file is spooled to a
 * private temporary file while its SHA-256 is computed, then handed to the store.
 *
 * <p>An archive that cannot be read to its end (a backend cut it at the agent's cap plus room for
 * headers, as it must for an archive whose size the workload controls; or it is damaged) keeps what
 * was read whole before the failure: the entry being read is dropped as {@link Reason#TRUNCATED},
 * and the rest is named as one more drop, {@code (the rest of the archive: <why>)}. A failure to
 * spool or store is not the archive's and fails the collection.
 */
public final class OutputCollector {
  /** How many dropped files are named; the rest are only counted. */
  public static final int MAX_DROPPED_NAMED = 100;

  /** The most archive entries read, kept or not. */
  public static final int MAX_ENTRIES_READ = 100_000;

  private final ArtifactStore store;
  private final Path spool;

  /**
   * @param spool a private folder for temporary copies (under the data directory)
   */
  public OutputCollector(ArtifactStore store, Path spool) {
    this.store = store;
    this.spool = spool;
  }

  /**
   * Reads {@code tar} and keeps what is allowed.
   *
   * @param folder the archive's top folder name for the output folder ({@code out} for an archive
   *     of {@code /workspace/out}); entries outside it are dropped
   * @throws IOException when the archive cannot be read at all or the spool fails
   */
  public CollectedOutputs collect(String runId, InputStream tar, String folder, OutputCaps caps)
      throws IOException {
    ArtifactStore.requireRunId(runId);
    // Owner only: what a run left is read here before it is checked and kept.
    Files.createDirectories(
        spool,
        java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
            java.nio.file.attribute.PosixFilePermissions.fromString("rwx------")));
    List<StoredArtifact> kept = new ArrayList<>();
    List<Dropped> dropped = new ArrayList<>();
    int[] droppedCount = {0};
    Set<String> keptFiles = new HashSet<>();
    Set<String> keptFolders = new HashSet<>();
    long bytes = 0;
    String top = folder + "/";
    try (TarArchiveInputStream in = new TarArchiveInputStream(tar)) {
      TarArchiveEntry entry;
      int read = 0;
      while ((entry = next(in)) != null && read++ < MAX_ENTRIES_READ) {
        String raw = entry.getName();
        if (entry.isDirectory() && (raw.equals(top) || raw.equals(folder))) {
          continue;
        }
        String path = raw.startsWith(top) ? stripSlash(raw.substring(top.length())) : null;
        if (entry.isDirectory()) {
          if (path == null || ArtifactPath.problem(path).isPresent()) {
            drop(dropped, droppedCount, raw, Reason.INVALID_PATH);
          }
          continue;
        }
        Reason refused = EntryRules.typeRefusal(entry);
        if (refused == null && (path == null || ArtifactPath.problem(path).isPresent())) {
          refused = Reason.INVALID_PATH;
        }
        if (refused == null
            && (keptFiles.contains(path)
                || keptFolders.contains(path)
                || EntryRules.parentIsFile(path, keptFiles))) {
          refused = Reason.CONFLICT;
        }
        if (refused == null && kept.size() >= caps.maxFiles()) {
          refused = Reason.OVER_COUNT_CAP;
        }
        if (refused == null && bytes + entry.getSize() > caps.maxBytes()) {
          refused = Reason.OVER_SIZE_CAP;
        }
        if (refused != null) {
          drop(dropped, droppedCount, path == null ? raw : path, refused);
          continue;
        }
        StoredArtifact stored;
        try {
          stored = spoolAndStore(runId, path, in, entry.getSize());
        } catch (UnreadableArchiveException e) {
          drop(dropped, droppedCount, path, Reason.TRUNCATED);
          throw e;
        }
        if (stored == null) {
          drop(dropped, droppedCount, path, Reason.TRUNCATED);
          continue;
        }
        kept.add(stored);
        bytes += stored.size();
        keptFiles.add(path);
        for (int slash = path.indexOf('/'); slash > 0; slash = path.indexOf('/', slash + 1)) {
          keptFolders.add(path.substring(0, slash));
        }
      }
      if (entry != null) {
        drop(
            dropped,
            droppedCount,
            "(entries after the first " + MAX_ENTRIES_READ + ")",
            Reason.OVER_COUNT_CAP);
      }
    } catch (UnreadableArchiveException e) {
      drop(
          dropped,
          droppedCount,
          "(the rest of the archive: " + e.getMessage() + ")",
          Reason.TRUNCATED);
    }
    return new CollectedOutputs(kept, dropped, droppedCount[0]);
  }

  /** The archive could not be read on (cut, or damaged); nothing about the spool or the store. */
  private static final class UnreadableArchiveException extends IOException {
    UnreadableArchiveException(IOException cause) {
      super(
          cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage(),
          cause);
    }
  }

  private static TarArchiveEntry next(TarArchiveInputStream in) throws UnreadableArchiveException {
    try {
      return in.getNextEntry();
    } catch (IOException e) {
      throw new UnreadableArchiveException(e);
    }
  }

  private StoredArtifact spoolAndStore(
      String runId, String path, TarArchiveInputStream in, long size) throws IOException {
    Path temp = Files.createTempFile(spool, "artifact-", ".part");
    try {
      MessageDigest sha = sha256();
      long copied = 0;
      byte[] buffer = new byte[64 * 1024];
      try (OutputStream out = new DigestOutputStream(Files.newOutputStream(temp), sha)) {
        while (true) {
          int n;
          try {
            n = in.read(buffer);
          } catch (IOException e) {
            throw new UnreadableArchiveException(e);
          }
          if (n < 0) {
            break;
          }
          out.write(buffer, 0, n);
          copied += n;
        }
      }
      if (copied != size) {
        return null;
      }
      return store.put(runId, path, temp, HexFormat.of().formatHex(sha.digest()));
    } finally {
      Files.deleteIfExists(temp);
    }
  }

  private static String stripSlash(String path) {
    return path.endsWith("/") ? path.substring(0, path.length() - 1) : path;
  }

  private static void drop(List<Dropped> dropped, int[] count, String path, Reason reason) {
    count[0]++;
    if (dropped.size() < MAX_DROPPED_NAMED) {
      dropped.add(new Dropped(EntryRules.shown(path), reason));
    }
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has SHA-256", e);
    }
  }
}
