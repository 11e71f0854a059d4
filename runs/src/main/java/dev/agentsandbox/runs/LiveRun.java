package dev.agentsandbox.runs;

import dev.agentsandbox.backend.PreparedSandbox;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxBackend;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.store.RunRecord;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.UnaryOperator;

/**
 * One run this control plane launched (a one-shot run or a session): its spec, its backend, its
 * live output and decisions, and the sandbox handle once launched. Kill requests that arrive before
 * the sandbox exists are kept and applied the moment it does.
 */
final class LiveRun {
  final RunSpec spec;
  final String actor;
  final SandboxBackend backend;
  final Probe probe;
  final RunOutput output;
  final EgressRecorder egress;

  /** The credentials minted for the run, revoked when its workload stops. */
  final RunCredentials credentials;

  /**
   * Completed with the run's row once its result is final and recorded (exit status, outputs
   * collected, rows written), before its sandbox is removed: what a caller waiting for the run
   * waits for.
   */
  final CompletableFuture<RunRecord> ended = new CompletableFuture<>();

  /** Completed once the sandbox's removal has ended and its teardown row is written. */
  final CompletableFuture<RunRecord> done = new CompletableFuture<>();

  final RunSlots.Slot slot;
  final dev.agentsandbox.policy.config.OutputLimits outputs;

  /** The warm sandbox the run takes over instead of launching one, if it got one. */
  final Optional<PreparedSandbox> prepared;

  /** What a session holds beyond a run; empty for a one-shot run. */
  final Optional<LiveSession> session;

  private RunRecord record;
  private Sandbox sandbox;
  private boolean killRequested;
  private String detail = "";

  LiveRun(
      RunSpec spec,
      String actor,
      SandboxBackend backend,
      Probe probe,
      RunOutput output,
      EgressRecorder egress,
      RunCredentials credentials,
      RunRecord record,
      RunSlots.Slot slot,
      dev.agentsandbox.policy.config.OutputLimits outputs,
      Optional<PreparedSandbox> prepared,
      Optional<LiveSession> session) {
    this.spec = spec;
    this.actor = actor;
    this.backend = backend;
    this.probe = probe;
    this.output = output;
    this.egress = egress;
    this.credentials = credentials;
    this.record = record;
    this.slot = slot;
    this.outputs = outputs;
    this.prepared = prepared;
    this.session = session;
  }

  String runId() {
    return spec.runId();
  }

  /**
   * Waits for the run's result to be final and recorded ({@link #ended}); its sandbox may still be
   * being removed.
   *
   * @throws RunException when the run's lifecycle failed instead of recording a result
   */
  void awaitResult() throws InterruptedException {
    try {
      ended.get();
    } catch (ExecutionException e) {
      throw new RunException("running " + runId() + ": " + e.getCause().getMessage(), e);
    }
  }

  SandboxListener listener() {
    return new SandboxListener() {
      @Override
      public void onOutput(byte[] chunk) {
        output.append(chunk);
      }

      @Override
      public void onErrorOutput(byte[] chunk) {
        output.appendError(chunk);
      }

      @Override
      public void onEgressDecision(String jsonLine) {
        // A session's decisions are attributed to the steps that were running when the proxy
        // made them; their audit rows name those steps.
        egress.accept(
            jsonLine,
            decision -> session.map(s -> s.attribute(decision)).orElse(java.util.List.of()));
      }
    };
  }

  synchronized void attach(Sandbox launched) {
    this.sandbox = launched;
    if (killRequested) {
      launched.kill();
    }
  }

  /** Asks for the run to stop; returns false when it had already ended (or is being removed). */
  synchronized boolean kill() {
    if (ended.isDone()) {
      return false;
    }
    killRequested = true;
    if (sandbox != null) {
      sandbox.kill();
    }
    return true;
  }

  synchronized boolean killRequested() {
    return killRequested;
  }

  synchronized RunRecord record() {
    return record;
  }

  synchronized RunRecord update(UnaryOperator<RunRecord> change) {
    record = change.apply(record);
    return record;
  }

  synchronized String detail() {
    return detail;
  }

  synchronized void detail(String text) {
    this.detail = text;
  }
}
