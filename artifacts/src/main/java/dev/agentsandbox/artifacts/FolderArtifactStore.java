package dev.agentsandbox.artifacts;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Artifacts in a folder, by default under the control plane's data directory: {@code
 * <root>/<run>/files/<path>} and a {@code <root>/<run>/SHA256SUMS} in {@code sha256sum}'s format,
 * so an operator can check a run's files with {@code sha256sum -c SHA256SUMS} in that folder.
 *
 * <p>A file is written under a scratch name in {@code <root>/<run>/scratch/}, outside {@code
 * files/}, so that no artifact can have it; forced to disk and moved into place before its line is
 * appended to {@code SHA256SUMS} (also forced), so a crash never lists a half-written file. Every
 * folder the store creates is 0700 and every file 0600: a run's outputs are its agent's and the
 * control plane's, not every local user's. Thread-safe: puts of one store are serialised.
 */
public final class FolderArtifactStore implements ArtifactStore {
  private static final String RUN_ID = "[a-z0-9]{1,32}";
  private static final String SUMS = "SHA256SUMS";
  private static final String SCRATCH = "scratch";
  private static final FileAttribute<Set<PosixFilePermission>> OWNER_ONLY_FOLDER =
      PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------"));
  private static final FileAttribute<Set<PosixFilePermission>> OWNER_ONLY_FILE =
      PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"));
  private final Path root;

  public FolderArtifactStore(Path root) {
    this.root = root.toAbsolutePath().normalize();
  }

  @Override
  public String describe() {
    return "folder " + root;
  }

  @Override
  public synchronized StoredArtifact put(String runId, String path, Path content, String sha256) {
    ArtifactStore.requireRunId(runId);
    ArtifactPath.require(path);
    Path runDir = root.resolve(runId);
    Path target = runDir.resolve("files").resolve(path).normalize();
    if (!target.startsWith(runDir.resolve("files"))) {
      throw new InvalidArtifactPathException(path, "escapes the run's folder");
    }
    try {
      Files.createDirectories(target.getParent(), OWNER_ONLY_FOLDER);
      requireNoLinks(runDir, target.getParent());
      Path scratch = Files.createDirectories(runDir.resolve(SCRATCH), OWNER_ONLY_FOLDER);
      requireNoLinks(runDir, scratch);
      // A fresh name in a folder artifacts never live in: an artifact called .partial-X is not
      // the scratch file of X. Created 0600 and written through, so the content's own mode never
      // applies.
      Path partial = Files.createTempFile(scratch, "put-", ".partial", OWNER_ONLY_FILE);
      long size;
      try {
        try (InputStream in = Files.newInputStream(content);
            OutputStream out = Files.newOutputStream(partial, StandardOpenOption.WRITE)) {
          size = in.transferTo(out);
        }
        force(partial);
        Files.move(partial, target, StandardCopyOption.ATOMIC_MOVE);
      } finally {
        Files.deleteIfExists(partial);
      }
      StoredArtifact stored = new StoredArtifact(path, size, sha256);
      appendSum(runDir.resolve(SUMS), sha256 + "  " + path + "\n");
      return stored;
    } catch (IOException e) {
      throw UnableToStoreArtifactException.of(
          "keep artifact " + InvalidArtifactPathException.shorten(path),
          runId,
          this,
          String.valueOf(e),
          e);
    }
  }

  @Override
  public List<StoredArtifact> list(String runId) {
    ArtifactStore.requireRunId(runId);
    Path runDir = root.resolve(runId);
    List<String> lines;
    try {
      lines = Files.readAllLines(runDir.resolve(SUMS), StandardCharsets.UTF_8);
    } catch (NoSuchFileException e) {
      return List.of();
    } catch (IOException e) {
      throw new UncheckedIOException("read " + runDir.resolve(SUMS), e);
    }
    List<StoredArtifact> out = new ArrayList<>();
    for (String line : lines) {
      int gap = line.indexOf("  ");
      if (gap != 64) {
        continue; // a line torn by a crash mid-append: its file is not listed
      }
      String path = line.substring(66);
      Path file = runDir.resolve("files").resolve(path);
      try {
        out.add(new StoredArtifact(path, Files.size(file), line.substring(0, 64)));
      } catch (IOException | IllegalArgumentException e) {
        // listed but gone (deleted by hand) or unreadable: not offered for download
      }
    }
    out.sort(Comparator.comparing(StoredArtifact::path));
    return List.copyOf(out);
  }

  @Override
  public InputStream open(String runId, String path) {
    ArtifactStore.requireRunId(runId);
    ArtifactPath.require(path);
    boolean listed = list(runId).stream().anyMatch(a -> a.path().equals(path));
    if (!listed) {
      throw new ArtifactNotFoundException(runId, path);
    }
    Path file = root.resolve(runId).resolve("files").resolve(path);
    try {
      return Files.newInputStream(file, LinkOption.NOFOLLOW_LINKS);
    } catch (NoSuchFileException e) {
      throw new ArtifactNotFoundException(runId, path);
    } catch (IOException e) {
      throw new UncheckedIOException("read " + file, e);
    }
  }

  @Override
  public synchronized void deleteRun(String runId) {
    ArtifactStore.requireRunId(runId);
    Path runDir = root.resolve(runId);
    if (!Files.exists(runDir, LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(runDir)) {
      for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    } catch (IOException e) {
      throw UnableToStoreArtifactException.of(
          "delete the artifacts", runId, this, String.valueOf(e), e);
    }
  }

  @Override
  public synchronized List<String> runIds() {
    if (!Files.isDirectory(root)) {
      return List.of();
    }
    try (Stream<Path> runs = Files.list(root)) {
      return runs.filter(p -> Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS))
          .map(p -> p.getFileName().toString())
          .filter(name -> name.matches(RUN_ID))
          .toList();
    } catch (IOException e) {
      throw new UnableToStoreArtifactException("list the runs in " + describe() + ": " + e, e);
    }
  }

  /** Refuses to write through a symbolic link someone planted inside the store's folder. */
  private static void requireNoLinks(Path runDir, Path dir) throws IOException {
    for (Path p = dir; p != null && p.startsWith(runDir); p = p.getParent()) {
      if (Files.isSymbolicLink(p)) {
        throw new IOException(p + " is a symbolic link");
      }
    }
  }

  private static void appendSum(Path sums, String line) throws IOException {
    try (SeekableByteChannel channel =
        Files.newByteChannel(
            sums,
            Set.of(
                StandardOpenOption.CREATE,
                StandardOpenOption.APPEND,
                StandardOpenOption.WRITE,
                StandardOpenOption.SYNC),
            OWNER_ONLY_FILE)) {
      ByteBuffer bytes = ByteBuffer.wrap(line.getBytes(StandardCharsets.UTF_8));
      while (bytes.hasRemaining()) {
        channel.write(bytes);
      }
    }
  }

  private static void force(Path file) throws IOException {
    try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
      channel.force(true);
    }
  }
}
