package dev.agentsandbox.backend.microvm;

import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.session.SessionSandbox;
import dev.agentsandbox.steprunner.RunnerClient;
import dev.agentsandbox.steprunner.RunnerSession;
import java.io.IOException;
import java.io.InputStream;
import java.time.Instant;
import java.util.Optional;

/**
 * A session's VM: a {@link MicroVmSandbox} whose guest runs the step runner on its control port
 * (docs/step-runner.md) instead of a command. Steps and files are frames on that one virtio-serial
 * port, each step's output framed on its own; the {@link RunnerClient} trusts nothing the guest
 * sends, and a guest that breaks the protocol has its VM killed and the session ends as failed.
 * Thread-safe as {@link SessionSandbox} requires.
 */
final class MicroVmSession extends RunnerSession implements GuestControlPort {
  private final RunnerClient runner;
  private volatile MicroVmSandbox vm;

  MicroVmSession(String runId) {
    this.runner = new RunnerClient("run " + runId, this::write, this::violated);
  }

  /** Attaches the VM whose control port this session speaks on; before it starts. */
  void attach(MicroVmSandbox sandbox) {
    this.vm = sandbox;
  }

  @Override
  protected RunnerClient runner() {
    return runner;
  }

  private void write(byte[] frame) throws IOException {
    MicroVmSandbox sandbox = vm;
    if (sandbox == null || !sandbox.sendControl(frame)) {
      throw new IOException("the VM's control port is not connected");
    }
  }

  private void violated(String why) {
    MicroVmSandbox sandbox = vm;
    if (sandbox != null) {
      sandbox.failed(why);
    }
  }

  @Override
  public void received(byte[] chunk) {
    runner.receive(chunk, 0, chunk.length);
  }

  @Override
  public void ended() {
    runner.ended();
  }

  @Override
  public boolean askToStop(GuestChannel channel) {
    return runner.bye();
  }

  @Override
  public String runId() {
    return vm.runId();
  }

  @Override
  public String runtime() {
    return vm.runtime();
  }

  @Override
  public Optional<String> imageId() {
    return vm.imageId();
  }

  /**
   * As a run's, except that a guest ending by itself is a failure: a session's guest only stops
   * when asked, so its runner exiting on its own (a step killed it) is reported as {@code ERROR}.
   */
  @Override
  public Completion await(Instant deadline) throws InterruptedException {
    Completion completion = vm.await(deadline);
    markOver();
    if (completion.end() == Completion.End.EXIT) {
      return new Completion(
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
    return vm.outputs();
  }

  @Override
  public void kill() {
    markOver();
    vm.kill();
  }

  @Override
  public void teardown() {
    markOver();
    vm.teardown();
  }

  MicroVmSandbox vm() {
    return vm;
  }
}
