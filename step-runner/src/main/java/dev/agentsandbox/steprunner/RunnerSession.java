package dev.agentsandbox.steprunner;

import dev.agentsandbox.backend.session.ArchiveWritten;
import dev.agentsandbox.backend.session.PathInfo;
import dev.agentsandbox.backend.session.SessionSandbox;
import dev.agentsandbox.backend.session.Step;
import dev.agentsandbox.backend.session.StepListener;
import dev.agentsandbox.backend.session.StepSpec;
import dev.agentsandbox.backend.session.UnableToRunStepException;
import dev.agentsandbox.backend.session.WorkspacePath;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A session's sandbox whose steps and file operations are the step runner's frames
 * (docs/step-runner.md): the one place where every backend's session hands {@link SessionSandbox}'s
 * steps and files to its {@link RunnerClient}, and refuses them once the session is over. A backend
 * says only how it reaches its runner ({@link #runner()}: a VM's control port, a pod's relay
 * channel, a container's exec) and when the session is over ({@link #markOver()}, from its await,
 * kill, teardown or failure); the rest of the {@link dev.agentsandbox.backend.Sandbox} is its own.
 *
 * <p>Thread-safe as {@link SessionSandbox} requires: the over flag is atomic, and the client is.
 */
public abstract class RunnerSession implements SessionSandbox {
  private final AtomicBoolean over = new AtomicBoolean();

  protected RunnerSession() {}

  /** The client of this session's runner; asked only while the session is not over. */
  protected abstract RunnerClient runner();

  /**
   * What the refusal of an operation after the end adds to its message, such as {@code "; " + why
   * the session failed}; empty by default.
   */
  protected String whyOver() {
    return "";
  }

  /**
   * Ends the session for steps and files: every later one throws {@link UnableToRunStepException}.
   */
  protected final void markOver() {
    over.set(true);
  }

  /** Whether {@link #markOver()} was called. */
  protected final boolean isOver() {
    return over.get();
  }

  private RunnerClient open() {
    if (over.get()) {
      throw new UnableToRunStepException(
          "using the session of run "
              + runId()
              + ": it has ended (its sandbox is stopping or gone)"
              + whyOver());
    }
    return runner();
  }

  @Override
  public final Step exec(StepSpec step, StepListener listener) {
    return open().exec(step, listener);
  }

  @Override
  public final long putFile(WorkspacePath path, InputStream content, long maxBytes) {
    return open().files().putFile(path, content, maxBytes);
  }

  @Override
  public final ArchiveWritten putArchive(WorkspacePath folder, InputStream tar, long maxBytes) {
    return open().files().putArchive(folder, tar, maxBytes);
  }

  @Override
  public final PathInfo stat(WorkspacePath path) {
    return open().files().stat(path);
  }

  @Override
  public final List<PathInfo> list(WorkspacePath folder, int max) {
    return open().files().list(folder, max);
  }

  @Override
  public final void readFile(WorkspacePath path, OutputStream out, long maxBytes) {
    open().files().readFile(path, out, maxBytes);
  }

  @Override
  public final List<String> readFolder(WorkspacePath path, OutputStream out, long maxBytes) {
    return open().files().readFolder(path, out, maxBytes);
  }
}
