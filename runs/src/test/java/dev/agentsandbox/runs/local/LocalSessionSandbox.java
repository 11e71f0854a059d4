package dev.agentsandbox.runs.local;

import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.RunContract;
import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.session.ArchiveWritten;
import dev.agentsandbox.backend.session.PathInfo;
import dev.agentsandbox.backend.session.PathRefusedException;
import dev.agentsandbox.backend.session.PathRefusedException.Reason;
import dev.agentsandbox.backend.session.SessionSandbox;
import dev.agentsandbox.backend.session.Step;
import dev.agentsandbox.backend.session.StepListener;
import dev.agentsandbox.backend.session.StepSpec;
import dev.agentsandbox.backend.session.UnableToRunStepException;
import dev.agentsandbox.backend.session.WorkspacePath;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A session sandbox for tests, in this process: each step is a local process started in a private
 * temporary folder standing in for {@code /workspace}, with the session's and the step's
 * environment, its stdin, its two output streams pumped to its listener on threads of their own,
 * and a kill that stops it and everything it started. Files go through {@link LocalWorkspace}
 * (segment by segment, never following a link) and tar archives through commons-compress.
 *
 * <p>It is a test backend, not a sandbox: steps run as the test's own user on the test's host, with
 * no fence; only the tests' own commands are given to it. It honours the SPI's contract (await ends
 * on kill, deadline or an injected failure; every method refuses after kill or teardown; teardown
 * is idempotent and removes the folder), which is what the run service's tests rely on.
 */
public final class LocalSessionSandbox implements SessionSandbox {
  private final RunSpec spec;
  private final SandboxListener listener;
  private final LocalWorkspace workspace;
  private final Clock clock;
  private final String runtime;
  private final CompletableFuture<Completion> end = new CompletableFuture<>();
  private final Map<Integer, LocalStep> steps = new ConcurrentHashMap<>();
  private final Runnable onTeardown;
  private volatile boolean torn;

  /**
   * @param folder a fresh private folder that becomes the workspace (removed by teardown)
   * @param onTeardown told once the folder is removed (the backend forgets its resources)
   */
  public LocalSessionSandbox(
      RunSpec spec,
      SandboxListener listener,
      Path folder,
      Clock clock,
      String runtime,
      Runnable onTeardown) {
    this.onTeardown = onTeardown;
    this.spec = spec;
    this.listener = listener;
    this.workspace = new LocalWorkspace(folder);
    this.clock = clock;
    this.runtime = runtime;
  }

  /** The host folder standing in for {@code /workspace}, for tests that plant things in it. */
  public Path folder() {
    return workspace.root();
  }

  /** A decision the run's proxy would report, delivered as the proxy's listener gets it. */
  public void decide(String jsonLine) {
    listener.onEgressDecision(jsonLine);
  }

  /** The backend loses the sandbox: {@link #await} ends with {@code end}, every step is lost. */
  public void fail(Completion.End how, String detail) {
    steps.values().forEach(LocalStep::kill);
    end.complete(new Completion(how, OptionalInt.empty(), detail));
  }

  /** The credentials the session was handed, as the backend received them. */
  public List<RunCredential> credentials() {
    return spec.credentials();
  }

  @Override
  public String runId() {
    return spec.runId();
  }

  @Override
  public String runtime() {
    return runtime;
  }

  @Override
  public Completion await(Instant deadline) throws InterruptedException {
    long left = Math.max(0, Duration.between(clock.instant(), deadline).toMillis());
    try {
      return end.get(left, TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      steps.values().forEach(LocalStep::kill);
      end.complete(
          new Completion(Completion.End.DEADLINE, OptionalInt.empty(), "killed at the deadline"));
      return end.join();
    } catch (java.util.concurrent.ExecutionException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public Optional<InputStream> outputs() {
    Path out = workspace.root().resolve("out");
    if (!Files.isDirectory(out, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      return Optional.of(new java.io.ByteArrayInputStream(LocalTar.empty()));
    }
    java.io.ByteArrayOutputStream tar = new java.io.ByteArrayOutputStream();
    LocalTar.write(out, RunContract.OUT_ARCHIVE_FOLDER, tar, Long.MAX_VALUE);
    return Optional.of(new java.io.ByteArrayInputStream(tar.toByteArray()));
  }

  @Override
  public void kill() {
    steps.values().forEach(LocalStep::kill);
    end.complete(new Completion(Completion.End.KILLED, OptionalInt.of(137), "killed"));
  }

  @Override
  public void teardown() {
    kill();
    torn = true;
    try (Stream<Path> all = Files.walk(workspace.root())) {
      for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    } catch (java.nio.file.NoSuchFileException e) {
      // Already removed.
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    onTeardown.run();
  }

  private void alive() {
    if (torn || end.isDone()) {
      throw new UnableToRunStepException("session " + spec.runId() + " has ended");
    }
  }

  @Override
  public Step exec(StepSpec step, StepListener out) {
    alive();
    Path cwd = workspace.folder(step.cwd(), false);
    List<String> command = step.command();
    ProcessBuilder builder = new ProcessBuilder(command).directory(cwd.toFile());
    Map<String, String> env = builder.environment();
    env.clear();
    env.put("PATH", "/usr/local/bin:/usr/bin:/bin");
    env.put("HOME", workspace.root().toString());
    env.putAll(spec.env());
    for (RunCredential credential : spec.credentials()) {
      credential.env().ifPresent(name -> env.put(name, credential.value()));
    }
    env.putAll(step.env());
    Process process;
    try {
      process = builder.start();
    } catch (IOException e) {
      throw new UnableToRunStepException(
          "start step " + step.number() + " of " + spec.runId() + ": " + e.getMessage(), e);
    }
    LocalStep started = new LocalStep(step.number(), process, step.stdin(), out);
    steps.put(step.number(), started);
    return started;
  }

  @Override
  public long putFile(WorkspacePath path, InputStream content, long maxBytes) {
    alive();
    if (path.isRoot()) {
      throw new PathRefusedException(path, Reason.WRONG_KIND, "the workspace is a folder");
    }
    Path folder = workspace.folder(path.parent(), true);
    Path target = folder.resolve(path.name());
    refuseOverwrite(path, target);
    Path temp = null;
    try {
      temp = Files.createTempFile(folder, ".put-", ".part");
      long copied;
      try (OutputStream out = Files.newOutputStream(temp)) {
        copied = content.transferTo(new Capped(out, maxBytes));
      } catch (Capped.Over e) {
        throw new PathRefusedException(path, Reason.TOO_LARGE, "over " + maxBytes + " bytes");
      }
      Files.setPosixFilePermissions(temp, LocalWorkspace.MODE_FILE);
      Files.move(temp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
      temp = null;
      return copied;
    } catch (IOException e) {
      throw new UnableToRunStepException("write " + path + ": " + e.getMessage(), e);
    } finally {
      if (temp != null) {
        try {
          Files.deleteIfExists(temp);
        } catch (IOException e) {
          // Left in the workspace; teardown removes it.
        }
      }
    }
  }

  private static void refuseOverwrite(WorkspacePath path, Path target) {
    if (!Files.exists(target, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    PathInfo info = LocalWorkspace.info(path, LocalWorkspace.attributes(path, target), target);
    switch (info.kind()) {
      case SYMLINK -> throw new PathRefusedException(path, Reason.SYMLINK, path + " is a link");
      case FOLDER -> throw new PathRefusedException(path, Reason.WRONG_KIND, path + " is a folder");
      case OTHER -> throw new PathRefusedException(path, Reason.NOT_REGULAR, path + " is special");
      case FILE -> {}
    }
  }

  @Override
  public ArchiveWritten putArchive(WorkspacePath folder, InputStream tar, long maxBytes) {
    alive();
    workspace.folder(folder, true);
    return LocalTar.extract(workspace, folder, tar, maxBytes, this::putFile);
  }

  @Override
  public PathInfo stat(WorkspacePath path) {
    alive();
    return workspace.stat(path);
  }

  @Override
  public List<PathInfo> list(WorkspacePath folder, int max) {
    alive();
    Path at = workspace.folder(folder, false);
    List<PathInfo> out = new ArrayList<>();
    try (Stream<Path> entries = Files.list(at)) {
      for (Path entry : entries.sorted().limit(max).toList()) {
        WorkspacePath child =
            folder.resolve(new WorkspacePath(List.of(entry.getFileName().toString())));
        out.add(LocalWorkspace.info(child, LocalWorkspace.attributes(child, entry), entry));
      }
    } catch (IOException e) {
      throw new UnableToRunStepException("list " + folder + ": " + e.getMessage(), e);
    }
    return out;
  }

  @Override
  public void readFile(WorkspacePath path, OutputStream out, long maxBytes) {
    alive();
    PathInfo info = workspace.stat(path);
    if (info.kind() != PathInfo.Kind.FILE) {
      throw new PathRefusedException(path, Reason.WRONG_KIND, path + " is not a regular file");
    }
    if (info.size() > maxBytes) {
      throw new PathRefusedException(path, Reason.TOO_LARGE, path + " is over " + maxBytes);
    }
    Path target = workspace.folder(path.parent(), false).resolve(path.name());
    try (InputStream in = Files.newInputStream(target, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      in.transferTo(out);
    } catch (IOException e) {
      throw new UnableToRunStepException("read " + path + ": " + e.getMessage(), e);
    }
  }

  @Override
  public List<String> readFolder(WorkspacePath path, OutputStream out, long maxBytes) {
    alive();
    Path at = workspace.folder(path, false);
    return LocalTar.write(at, null, out, maxBytes);
  }

  /** Stops a copy once it passes its cap. */
  static final class Capped extends java.io.FilterOutputStream {
    static final class Over extends IOException {
      private static final long serialVersionUID = 1L;
    }

    private final long cap;
    private long written;

    Capped(OutputStream out, long cap) {
      super(out);
      this.cap = cap;
    }

    @Override
    public void write(int b) throws IOException {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      if (written + len > cap) {
        throw new Over();
      }
      written += len;
      out.write(b, off, len);
    }
  }
}
