package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.session.ArchiveWritten;
import dev.agentsandbox.backend.session.PathInfo;
import dev.agentsandbox.backend.session.SessionSandbox;
import dev.agentsandbox.backend.session.Step;
import dev.agentsandbox.backend.session.StepListener;
import dev.agentsandbox.backend.session.StepSpec;
import dev.agentsandbox.backend.session.UnableToRunStepException;
import dev.agentsandbox.backend.session.WorkspacePath;
import dev.agentsandbox.relay.RelayChannel;
import dev.agentsandbox.steprunner.RunnerClient;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A session's namespace: a {@link KubernetesSandbox} whose agent pod runs the step runner behind
 * the session relay, reached over the relay's mutually authenticated TLS channel ({@link
 * RelayChannel}; docs/backends/k8s.md, "Sessions"). Steps and files are the runner's frames on that
 * one connection, which the {@link RunnerClient} reads as hostile. A runner that breaks the
 * protocol, or a channel that ends while the session is open, fails the sandbox ({@code ERROR}, the
 * reason kept) and its pod is stopped; nothing reconnects. Thread-safe as {@link SessionSandbox}
 * requires.
 */
final class KubernetesSession implements SessionSandbox, RelayChannel.Receiver {
  private final KubernetesSandbox sandbox;
  private final RunnerClient runner;
  private final AtomicBoolean over = new AtomicBoolean();
  private final AtomicBoolean closing = new AtomicBoolean();
  private volatile RelayChannel channel;

  KubernetesSession(KubernetesSandbox sandbox) {
    this.sandbox = sandbox;
    this.runner = new RunnerClient("run " + sandbox.runId(), this::write, this::violated);
  }

  RunnerClient runner() {
    return runner;
  }

  /** Attaches the connected channel; before the runner's greeting is awaited. */
  void attach(RelayChannel connected) {
    this.channel = connected;
  }

  private void write(byte[] frame) throws IOException {
    RelayChannel open = channel;
    if (open == null) {
      throw new IOException("the session's channel is not connected");
    }
    open.write(frame);
  }

  private void violated(String why) {
    closeChannel();
    if (!closing.get()) {
      sandbox.fail(why);
    }
  }

  @Override
  public void receive(byte[] bytes, int offset, int length) {
    runner.receive(bytes, offset, length);
  }

  @Override
  public void ended(String why) {
    runner.ended();
    if (!closing.get() && !over.get()) {
      // Nothing reconnects: the relay served its one session, and the runner has stopped.
      sandbox.fail("the session's channel to its step runner ended: " + why);
    }
  }

  private void open() {
    if (over.get()) {
      throw new UnableToRunStepException(
          "using the session of run "
              + runId()
              + ": it has ended (its sandbox is stopping or gone)");
    }
  }

  @Override
  public String runId() {
    return sandbox.runId();
  }

  @Override
  public String runtime() {
    return sandbox.runtime();
  }

  /**
   * As a run's, except that the step runner ending by itself is a failure: a session's runner only
   * stops when asked (a close, the idle clock) or when its channel is cut.
   */
  @Override
  public Completion await(Instant deadline) throws InterruptedException {
    Completion completion = sandbox.await(deadline);
    over.set(true);
    closeChannel();
    if (completion.end() == Completion.End.EXIT) {
      return closing.get()
          ? new Completion(
              Completion.End.KILLED,
              completion.exitStatus(),
              "the session was closed: its step runner stopped when asked")
          : new Completion(
              Completion.End.ERROR,
              completion.exitStatus(),
              "the step runner ended by itself ("
                  + completion.detail()
                  + "); the session cannot take steps any more");
    }
    return completion;
  }

  @Override
  public Optional<InputStream> outputs() {
    return sandbox.outputs();
  }

  /**
   * Ends the session: the runner is asked to kill its steps and stop (its container then ends, and
   * the collect sidecar writes the outputs), and the Job is deleted as for a run's kill.
   */
  @Override
  public void kill() {
    over.set(true);
    closing.set(true);
    runner.bye();
    sandbox.kill();
  }

  @Override
  public void teardown() {
    over.set(true);
    closing.set(true);
    closeChannel();
    sandbox.teardown();
  }

  private void closeChannel() {
    RelayChannel open = channel;
    if (open != null) {
      open.close();
    }
  }

  @Override
  public Step exec(StepSpec step, StepListener listener) {
    open();
    return runner.exec(step, listener);
  }

  @Override
  public long putFile(WorkspacePath path, InputStream content, long maxBytes) {
    open();
    return runner.files().putFile(path, content, maxBytes);
  }

  @Override
  public ArchiveWritten putArchive(WorkspacePath folder, InputStream tar, long maxBytes) {
    open();
    return runner.files().putArchive(folder, tar, maxBytes);
  }

  @Override
  public PathInfo stat(WorkspacePath path) {
    open();
    return runner.files().stat(path);
  }

  @Override
  public List<PathInfo> list(WorkspacePath folder, int max) {
    open();
    return runner.files().list(folder, max);
  }

  @Override
  public void readFile(WorkspacePath path, OutputStream out, long maxBytes) {
    open();
    runner.files().readFile(path, out, maxBytes);
  }

  @Override
  public List<String> readFolder(WorkspacePath path, OutputStream out, long maxBytes) {
    open();
    return runner.files().readFolder(path, out, maxBytes);
  }
}
