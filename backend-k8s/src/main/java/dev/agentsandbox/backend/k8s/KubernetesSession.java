package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.session.SessionSandbox;
import dev.agentsandbox.relay.RelayChannel;
import dev.agentsandbox.steprunner.RunnerClient;
import dev.agentsandbox.steprunner.RunnerSession;
import java.io.IOException;
import java.io.InputStream;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A session's namespace: a {@link KubernetesSandbox} whose agent pod runs the step runner behind
 * the session relay, reached over the relay's mutually authenticated TLS channel ({@link
 * RelayChannel}; docs/backends/k8s.md, "Sessions"). Steps and files are the runner's frames on that
 * one connection ({@link RunnerSession}), which the {@link RunnerClient} reads as hostile. A runner
 * that breaks the protocol, or a channel that ends while the session is open, fails the sandbox
 * ({@code ERROR}, the reason kept) and its pod is stopped; nothing reconnects. Thread-safe as
 * {@link SessionSandbox} requires.
 */
final class KubernetesSession extends RunnerSession implements RelayChannel.Receiver {
  private final KubernetesSandbox sandbox;
  private final RunnerClient runner;
  private final AtomicBoolean closing = new AtomicBoolean();
  private volatile RelayChannel channel;

  KubernetesSession(KubernetesSandbox sandbox) {
    this.sandbox = sandbox;
    this.runner = new RunnerClient("run " + sandbox.runId(), this::write, this::violated);
  }

  @Override
  protected RunnerClient runner() {
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
    if (!closing.get() && !isOver()) {
      // Nothing reconnects: the relay served its one session, and the runner has stopped.
      sandbox.fail("the session's channel to its step runner ended: " + why);
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
    markOver();
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
    markOver();
    closing.set(true);
    runner.bye();
    sandbox.kill();
  }

  @Override
  public void teardown() {
    markOver();
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
}
