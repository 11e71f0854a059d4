package dev.agentsandbox.runs;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.artifacts.CollectedOutputs;
import dev.agentsandbox.artifacts.OutputCaps;
import dev.agentsandbox.artifacts.StoredArtifact;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.RunContract;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.session.SessionSandbox;
import dev.agentsandbox.policy.event.ArtifactsCollected;
import dev.agentsandbox.policy.event.ArtifactsNotCollected;
import dev.agentsandbox.policy.event.CredentialsRevoked;
import dev.agentsandbox.policy.event.Failed;
import dev.agentsandbox.policy.event.ProxyDied;
import dev.agentsandbox.policy.event.Revocation;
import dev.agentsandbox.policy.event.RunEvent;
import dev.agentsandbox.policy.event.RuntimeMismatched;
import dev.agentsandbox.policy.event.Started;
import dev.agentsandbox.policy.event.TimedOut;
import dev.agentsandbox.policy.event.TornDown;
import dev.agentsandbox.policy.text.Bounded;
import dev.agentsandbox.runs.audit.RunTrail;
import dev.agentsandbox.store.RunRecord;
import dev.agentsandbox.store.RunStatus;
import dev.agentsandbox.store.Store;
import java.io.IOException;
import java.io.InputStream;
import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One run from launch to teardown, on its own thread: launch, wait to the deadline, collect, record
 * how it ended and answer whoever waits for the result ({@link LiveRun#ended}), then tear down on
 * every path and audit it ({@link LiveRun#done}).
 */
final class RunLifecycle {
  private static final Logger LOG = LoggerFactory.getLogger(RunLifecycle.class);

  private final Store store;
  private final Clock clock;
  private final RunTrail trail;
  private final Consumer<LiveRun> retire;
  private final RunContractServices contract;
  private final SessionLifecycle sessions;

  RunLifecycle(
      Store store,
      Clock clock,
      ObjectMapper json,
      Consumer<LiveRun> retire,
      RunContractServices contract,
      SessionLifecycle sessions) {
    this.store = store;
    this.clock = clock;
    this.trail = new RunTrail(store.audit());
    this.retire = retire;
    this.contract = contract;
    this.sessions = sessions;
  }

  void execute(LiveRun run, Instant deadline) {
    Completion completion;
    Sandbox sandbox = null;
    String stage = "launch";
    try {
      if (run.session.isPresent()) {
        sandbox = sessions.open(run);
      } else {
        sandbox =
            run.prepared.isPresent()
                ? run.prepared.get().handOver(run.spec, run.listener())
                : run.backend.launch(run.spec, run.listener());
      }
      run.attach(sandbox);
      String runtime = sandbox.runtime();
      Instant started = clock.instant();
      store.runs().update(run.update(r -> r.started(runtime, started)));
      // What actually runs, now that the backend has created it: the launch row was written
      // before anything existed, so the image's content id can only be known here.
      // Which runs were built on a proxy-pool standby (docs/backends/docker.md, "Proxy pool").
      record(run, new Started(runtime, run.spec.image(), sandbox.imageId(), sandbox.pooledProxy()));
      stage = "await";
      if (run.session.isPresent()) {
        // Ready for steps only once its rows say it started.
        SessionSandbox session = (SessionSandbox) sandbox;
        run.session.get().opened(session);
        completion = sessions.await(run, session, deadline);
      } else {
        completion = sandbox.await(deadline);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      completion =
          new Completion(
              Completion.End.ERROR,
              OptionalInt.empty(),
              "the control plane stopped waiting for the run (it is shutting down)");
    } catch (RuntimeException e) {
      LOG.warn("run {} failed at {}: {}", run.runId(), stage, e.getMessage());
      completion =
          new Completion(
              Completion.End.ERROR, OptionalInt.empty(), stage + ": " + bounded(e.getMessage()));
    }
    // A session's steps end before anything else: each is recorded session_ended.
    run.session.ifPresent(s -> sessions.endSteps(run));
    // The workload has stopped (or never started): its credentials die now, before anything else.
    revokeCredentials(run);
    // Outputs live on the sandbox's volumes (Docker), disk image (microVM) or pod (k8s): they are
    // read before anything is removed.
    collectOutputs(run, sandbox);
    RunRecord result = null;
    RuntimeException recording = null;
    try {
      result = finish(run, completion, sandbox != null);
    } catch (RuntimeException e) {
      LOG.error("run {}: recording its end failed: {}", run.runId(), e.getMessage());
      recording = e;
    } finally {
      // A client that followed the output to its end then finds the run's result recorded.
      run.output.close();
    }
    // The run's result is final and recorded: whoever waits for it is answered now, and the
    // sandbox is removed after, on this thread. The run keeps its slot and stays live for the
    // reaper until the removal has ended (docs/runs.md, "Teardown").
    if (recording == null) {
      run.ended.complete(result);
    } else {
      run.ended.completeExceptionally(recording);
    }
    String teardownProblem = null;
    if (sandbox != null) {
      try {
        sandbox.teardown();
      } catch (RuntimeException e) {
        teardownProblem = bounded(e.getMessage());
        LOG.warn("run {}: teardown failed: {}", run.runId(), teardownProblem);
      }
    }
    try {
      // The proxy is gone with the sandbox: no refusal can follow the last count.
      run.egress.finish();
    } catch (RuntimeException e) {
      LOG.error(
          "run {}: recording its counted egress refusals failed: {}", run.runId(), e.getMessage());
    }
    try {
      if (result != null) {
        recordTeardown(run, result, sandbox != null, teardownProblem);
      }
    } catch (RuntimeException e) {
      LOG.error("run {}: recording its teardown failed: {}", run.runId(), e.getMessage());
      if (recording == null) {
        recording = e;
      }
    } finally {
      retire.accept(run);
      if (recording == null) {
        run.done.complete(result);
      } else {
        run.done.completeExceptionally(recording);
      }
    }
  }

  /** Records how the run ended: its row, and its timeout or failure row; returns the row. */
  private RunRecord finish(LiveRun run, Completion completion, boolean launched) {
    // A kill that races the workload's own exit is reported as a kill: the operator asked.
    Completion.End end =
        run.killRequested() && completion.end() != Completion.End.DEADLINE
            ? Completion.End.KILLED
            : completion.end();
    Optional<String> normal =
        run.session.isPresent() ? SessionLifecycle.normalEnd(run, end) : Optional.empty();
    if (run.session.isPresent() && normal.isEmpty() && end == Completion.End.EXIT) {
      // A session's workload only waits for steps: stopping by itself is the backend losing it.
      end = Completion.End.ERROR;
      completion =
          new Completion(
              end,
              completion.exitStatus(),
              "the session's workload stopped by itself: " + completion.detail());
    }
    RunStatus status =
        switch (end) {
          case EXIT -> RunStatus.EXITED;
          case DEADLINE -> RunStatus.DEADLINE;
          case KILLED -> RunStatus.KILLED;
          case ERROR, RUNTIME_MISMATCH, PROXY_DIED -> RunStatus.FAILED;
        };
    String endReason = end.name().toLowerCase(java.util.Locale.ROOT);
    if (normal.isPresent()) {
      // A session closed or gone idle: its status is closed, its end says which.
      status = RunStatus.CLOSED;
      endReason = normal.get();
    }
    Instant ended = clock.instant();
    // A session has no exit status of its own: each step has one.
    Integer exit =
        completion.exitStatus().isPresent() && run.session.isEmpty()
            ? completion.exitStatus().getAsInt()
            : null;
    String tail = run.output.tail();
    run.detail(completion.detail());
    RunStatus outcome = status;
    String reason = endReason;
    RunRecord record = run.update(r -> r.ended(outcome, ended, exit, reason, tail));
    String detail = completion.detail();
    switch (end) {
      case DEADLINE -> record(run, new TimedOut(run.spec.ttl().toSeconds(), detail));
      // Its own row: the isolation the run was launched for was not there, so nothing ran.
      case RUNTIME_MISMATCH ->
          record(run, new RuntimeMismatched(record.backend(), record.runtime(), detail));
      // Its own row: the fence's proxy stopped under a running workload, which was then stopped.
      case PROXY_DIED -> record(run, new ProxyDied(record.backend(), detail));
      case ERROR ->
          record(run, new Failed(launched ? Failed.Stage.RUN : Failed.Stage.LAUNCH, detail));
      case EXIT, KILLED -> {}
    }
    store.runs().update(record);
    return record;
  }

  /**
   * The run's {@code agent_sandbox.teardown} row, written once the removal has ended (after the
   * run's result was answered): whether everything was removed, and if not why.
   */
  private void recordTeardown(
      LiveRun run, RunRecord record, boolean launched, String teardownProblem) {
    record(
        run,
        new TornDown(
            record.endReason(),
            Optional.ofNullable(record.exitStatus()),
            record.backend(),
            record.runtime(),
            launched && teardownProblem == null,
            launched
                ? Optional.empty()
                : Optional.of("the launch failed; the backend removed what it had created"),
            Optional.ofNullable(teardownProblem)
                .map(problem -> problem + " (the reaper removes what is left)"),
            run.output.totalBytes(),
            run.egress.decisions().size() + run.egress.dropped(),
            Optional.of(run.egress.totals())));
  }

  private void record(LiveRun run, RunEvent event) {
    trail.append(run.actor, run.spec.agent(), run.runId(), event);
  }

  /**
   * Revokes what the run was given and records what became of each credential; a credential that
   * could not be revoked is named with why (docs/runs.md, "Credentials"). A run token left valid by
   * a failure here is revoked by a later reaper pass ({@link CredentialMinter#sweepRunTokens}).
   */
  private void revokeCredentials(LiveRun run) {
    RunCredentials credentials = run.credentials;
    if (credentials.minted().isEmpty()) {
      return;
    }
    List<Revocation> revoked =
        contract
            .credentials()
            .revoke(credentials.specs(), credentials.identity(), credentials.minted());
    revoked.stream()
        .filter(Revocation::live)
        .forEach(
            r ->
                LOG.warn(
                    "run {}: credential {} not revoked: {}",
                    run.runId(),
                    r.name(),
                    r.problem().orElse("")));
    try {
      record(run, new CredentialsRevoked(CredentialsRevoked.Stage.RUN, revoked));
    } catch (RuntimeException e) {
      LOG.error(
          "run {}: recording its revoked credentials failed: {}", run.runId(), e.getMessage());
    }
  }

  /**
   * Reads the sandbox's output folder into artifact storage and writes the run's {@code
   * agent_sandbox.artifacts} row, on every path: a run that never launched, a backend that does not
   * collect, and a collection that failed are recorded as such.
   */
  private void collectOutputs(LiveRun run, Sandbox sandbox) {
    RunEvent event;
    try {
      event = collect(run, sandbox);
    } catch (IOException | RuntimeException e) {
      LOG.warn("run {}: collecting its outputs failed: {}", run.runId(), e.getMessage());
      event =
          new ArtifactsNotCollected("collecting the outputs failed: " + bounded(e.getMessage()));
    }
    try {
      record(run, event);
    } catch (RuntimeException e) {
      LOG.error("run {}: recording its artifacts failed: {}", run.runId(), e.getMessage());
    }
  }

  private RunEvent collect(LiveRun run, Sandbox sandbox) throws IOException {
    if (contract.artifacts().isEmpty()) {
      return new ArtifactsNotCollected("no artifact storage is configured on this control plane");
    }
    if (sandbox == null) {
      return new ArtifactsNotCollected("the sandbox was never launched");
    }
    RunContractServices.Artifacts artifacts = contract.artifacts().get();
    Optional<InputStream> archive = sandbox.outputs();
    if (archive.isEmpty()) {
      return new ArtifactsNotCollected(
          "the " + run.backend.name() + " backend does not collect outputs");
    }
    CollectedOutputs collected;
    try (InputStream in = archive.get()) {
      collected =
          artifacts
              .collector()
              .collect(
                  run.runId(),
                  in,
                  RunContract.OUT_ARCHIVE_FOLDER,
                  new OutputCaps(run.outputs.maxBytes(), run.outputs.maxFiles()));
    }
    return new ArtifactsCollected(
        artifacts.store().describe(),
        collected.keptBytes(),
        collected.kept().stream()
            .map((StoredArtifact a) -> new ArtifactsCollected.File(a.path(), a.size(), a.sha256()))
            .toList(),
        collected.dropped().stream()
            .map(d -> new ArtifactsCollected.Dropped(d.path(), d.reason().wireName()))
            .toList(),
        collected.droppedCount());
  }

  /** A backend's or an exception's message as a run's row keeps it: at most 500 characters. */
  static String bounded(String message) {
    if (message == null) {
      return "(no detail)";
    }
    return Bounded.text(message, 500, Bounded.Escape.NONE);
  }
}
