package dev.agentsandbox.runs;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.session.SessionSandbox;
import dev.agentsandbox.store.AuditEvent;
import dev.agentsandbox.store.RunRecord;
import dev.agentsandbox.store.RunStatus;
import dev.agentsandbox.store.Store;
import java.time.Clock;
import java.time.Instant;
import java.util.OptionalInt;
import java.util.Set;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One run from launch to teardown, on its own thread: launch, wait to the deadline, collect, record
 * how it ended and answer whoever waits for the result ({@link LiveRun#ended}), then tear down on
 * every path and audit it ({@link LiveRun#done}).
 */
final class RunLifecycle {
  static final String FAILURE = "agent_sandbox.failure";
  static final String TIMEOUT = "agent_sandbox.timeout";
  static final String RUNTIME_MISMATCH = "agent_sandbox.runtime_mismatch";
  static final String PROXY_DIED = "agent_sandbox.proxy_died";
  static final String TEARDOWN = "agent_sandbox.teardown";
  static final String ARTIFACTS = "agent_sandbox.artifacts";
  static final String STARTED = "agent_sandbox.started";
  private static final Logger LOG = LoggerFactory.getLogger(RunLifecycle.class);

  private final Store store;
  private final Clock clock;
  private final ObjectMapper json;
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
    this.json = json;
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
      ObjectNode data = json.createObjectNode();
      data.put("runtime", runtime);
      data.put("image", run.spec.image());
      sandbox.imageId().ifPresent(id -> data.put("image_id", id));
      // Which runs were built on a proxy-pool standby (docs/backends/docker.md, "Proxy pool").
      sandbox.pooledProxy().ifPresent(id -> data.put("proxy_pool", id));
      store.audit().append(new AuditEvent(STARTED, run.actor, run.spec.agent(), run.runId(), data));
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
    java.util.Optional<String> normal =
        run.session.isPresent() ? SessionLifecycle.normalEnd(run, end) : java.util.Optional.empty();
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
    if (end == Completion.End.DEADLINE) {
      ObjectNode data = json.createObjectNode();
      data.put("ttl_seconds", run.spec.ttl().toSeconds());
      data.put("detail", completion.detail());
      store.audit().append(new AuditEvent(TIMEOUT, run.actor, run.spec.agent(), run.runId(), data));
    } else if (end == Completion.End.RUNTIME_MISMATCH) {
      // Its own row: the isolation the run was launched for was not there, so nothing ran.
      ObjectNode data = json.createObjectNode();
      data.put("backend", record.backend());
      data.put("expected_runtime", record.runtime());
      data.put("message", completion.detail());
      store
          .audit()
          .append(new AuditEvent(RUNTIME_MISMATCH, run.actor, run.spec.agent(), run.runId(), data));
    } else if (end == Completion.End.PROXY_DIED) {
      // Its own row: the fence's proxy stopped under a running workload, which was then stopped.
      ObjectNode data = json.createObjectNode();
      data.put("backend", record.backend());
      data.put("message", completion.detail());
      store
          .audit()
          .append(new AuditEvent(PROXY_DIED, run.actor, run.spec.agent(), run.runId(), data));
    } else if (end == Completion.End.ERROR) {
      ObjectNode data = json.createObjectNode();
      data.put("stage", launched ? "run" : "launch");
      data.put("message", completion.detail());
      store.audit().append(new AuditEvent(FAILURE, run.actor, run.spec.agent(), run.runId(), data));
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
    ObjectNode data = json.createObjectNode();
    data.put("end", record.endReason());
    if (record.exitStatus() != null) {
      data.put("exit_status", record.exitStatus());
    }
    data.put("backend", record.backend());
    data.put("runtime", record.runtime());
    data.put("removed", launched && teardownProblem == null);
    if (!launched) {
      data.put("note", "the launch failed; the backend removed what it had created");
    }
    if (teardownProblem != null) {
      data.put("problem", teardownProblem + " (the reaper removes what is left)");
    }
    data.put("output_bytes", run.output.totalBytes());
    data.put("egress_decisions", run.egress.decisions().size() + run.egress.dropped());
    store.audit().append(new AuditEvent(TEARDOWN, run.actor, run.spec.agent(), run.runId(), data));
  }

  private void revokeCredentials(LiveRun run) {
    try {
      contract.credentials().revoke(run.runId());
    } catch (RuntimeException e) {
      // The run token still expires at the deadline; say so rather than hide it.
      LOG.warn("run {}: revoking its token failed: {}", run.runId(), e.getMessage());
    }
  }

  /**
   * Reads the sandbox's output folder into artifact storage and writes the run's {@code
   * agent_sandbox.artifacts} row, on every path: a run that never launched, a backend that does not
   * collect, and a collection that failed are recorded as such.
   */
  private void collectOutputs(LiveRun run, Sandbox sandbox) {
    ObjectNode data = json.createObjectNode();
    data.put("collected", false);
    try {
      if (contract.artifacts().isEmpty()) {
        data.put("reason", "no artifact storage is configured on this control plane");
      } else if (sandbox == null) {
        data.put("reason", "the sandbox was never launched");
      } else {
        RunContractServices.Artifacts artifacts = contract.artifacts().get();
        java.util.Optional<java.io.InputStream> archive = sandbox.outputs();
        if (archive.isEmpty()) {
          data.put("reason", "the " + run.backend.name() + " backend does not collect outputs");
        } else {
          dev.agentsandbox.artifacts.CollectedOutputs collected;
          try (java.io.InputStream in = archive.get()) {
            collected =
                artifacts
                    .collector()
                    .collect(
                        run.runId(),
                        in,
                        dev.agentsandbox.backend.RunContract.OUT_ARCHIVE_FOLDER,
                        new dev.agentsandbox.artifacts.OutputCaps(
                            run.outputs.maxBytes(), run.outputs.maxFiles()));
          }
          data.put("collected", true);
          data.put("store", artifacts.store().describe());
          data.put("bytes", collected.keptBytes());
          com.fasterxml.jackson.databind.node.ArrayNode files = data.putArray("files");
          for (dev.agentsandbox.artifacts.StoredArtifact a : collected.kept()) {
            files.addObject().put("path", a.path()).put("size", a.size()).put("sha256", a.sha256());
          }
          com.fasterxml.jackson.databind.node.ArrayNode dropped = data.putArray("dropped");
          for (var d : collected.dropped()) {
            dropped.addObject().put("path", d.path()).put("reason", d.reason().wireName());
          }
          data.put("dropped_count", collected.droppedCount());
        }
      }
    } catch (java.io.IOException | RuntimeException e) {
      LOG.warn("run {}: collecting its outputs failed: {}", run.runId(), e.getMessage());
      data.put("collected", false);
      data.put("reason", "collecting the outputs failed: " + bounded(e.getMessage()));
    }
    try {
      store
          .audit()
          .append(new AuditEvent(ARTIFACTS, run.actor, run.spec.agent(), run.runId(), data));
    } catch (RuntimeException e) {
      LOG.error("run {}: recording its artifacts failed: {}", run.runId(), e.getMessage());
    }
  }

  /** Marks runs this instance left live, or whose expiry passed, as failed. */
  int recover(String instanceId, Set<String> liveHere) {
    Instant now = clock.instant();
    int recovered = 0;
    for (RunRecord r : store.runs().active()) {
      if (liveHere.contains(r.runId())) {
        continue;
      }
      boolean mine = instanceId.equals(r.owner());
      if (!mine && r.expiresAt().isAfter(now)) {
        continue;
      }
      String why =
          mine
              ? "the control plane that owned the run stopped while the run was live"
              : "the run outlived its expiry without its control plane recording an end";
      ObjectNode data = json.createObjectNode();
      data.put("stage", "recovery");
      data.put("message", why);
      store.audit().append(new AuditEvent(FAILURE, "control-plane", r.agent(), r.runId(), data));
      if (r.isSession()) {
        sessions.recoverSteps(r, now, why);
      }
      store.runs().update(r.ended(RunStatus.FAILED, now, r.exitStatus(), "error", null));
      recovered++;
    }
    return recovered;
  }

  static String bounded(String message) {
    if (message == null) {
      return "(no detail)";
    }
    return message.length() > 500 ? message.substring(0, 500) + "..." : message;
  }
}
