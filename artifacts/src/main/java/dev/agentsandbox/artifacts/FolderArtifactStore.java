package dev.agentsandbox.artifacts;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * Artifacts in a folder, by default under the control plane's data directory: {@code
 * <root>/<run>/files/<path>} and a {@code <root>/<run>/SHA256SUMS} in {@code sha256sum}'s format,
 * so an operator can check a run's files with {@code sha256sum -c SHA256SUMS} in that folder.
 *
 * <p>A file is written under a temporary name, forced to disk and moved into place before its line
 * is appended to {@code SHA256SUMS} (also forced), so a crash never lists a half-written file.
 * Thread-safe: puts of one store are serialised.
 */
public final class FolderArtifactStore implements ArtifactStore {
  private static final String RUN_ID = "[a-z0-9]{1,32}";
  private static final String SUMS = "SHA256SUMS";
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
      Files.createDirectories(target.getParent());
      requireNoLinks(runDir, target.getParent());
      long size = Files.size(content);
      Path partial = target.resolveSibling(".partial-" + target.getFileName());
      Files.copy(content, partial, StandardCopyOption.REPLACE_EXISTING);
      force(partial);
      try {
        Files.move(partial, target, StandardCopyOption.ATOMIC_MOVE);
      } catch (AtomicMoveNotSupportedException | FileAlreadyExistsException e) {
        Files.deleteIfExists(partial);
        throw e;
      }
      StoredArtifact stored = new StoredArtifact(path, size, sha256);
      Path sums = runDir.resolve(SUMS);
      Files.writeString(
          sums,
          sha256 + "  " + path + "\n",
          StandardCharsets.UTF_8,
          StandardOpenOption.CREATE,
          StandardOpenOption.APPEND,
          StandardOpenOption.SYNC);
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

  private static void force(Path file) throws IOException {
    try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
      channel.force(true);
    }
  }
}
