package dev.agentsandbox.runs;

import dev.agentsandbox.policy.config.AgentGrant;
import dev.agentsandbox.policy.event.KillRequested;
import dev.agentsandbox.policy.run.Redactor;
import dev.agentsandbox.runs.audit.ChainCheck;
import dev.agentsandbox.runs.audit.RecordedEvent;
import dev.agentsandbox.runs.audit.RunTimeline;
import dev.agentsandbox.runs.audit.RunTrail;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.AuditRow;
import dev.agentsandbox.store.RunKind;
import dev.agentsandbox.store.RunRecord;
import dev.agentsandbox.store.RunStatus;
import dev.agentsandbox.store.Store;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Answers for one run, live here or only stored: its view, its output, its timeline, whether the
 * reaper must spare it; and asks a live one to stop. Lists the newest runs a token may see.
 * Thread-safe.
 */
final class RunAnswers {
  /** Most audit rows of one run a timeline reads. */
  static final int MAX_TIMELINE_ROWS = 10_000;

  private final Store store;
  private final LiveRuns live;
  private final RunTrail trail;
  private final ChainCheck chain;
  private final Clock clock;
  private final int tailBytes;

  RunAnswers(Store store, LiveRuns live, RunTrail trail, Clock clock, int tailBytes) {
    this.store = store;
    this.live = live;
    this.trail = trail;
    this.chain = new ChainCheck(store.audit());
    this.clock = clock;
    this.tailBytes = tailBytes;
  }

  RunRecord stored(String runId) {
    return (RunIds.valid(runId) ? store.runs().find(runId) : Optional.<RunRecord>empty())
        .orElseThrow(() -> new RunNotFoundException(runId));
  }

  boolean kill(String actor, String runId) {
    LiveRun run = live.live(runId).orElse(null);
    if (run == null) {
      stored(runId);
      return false;
    }
    if (run.ended.isDone()) {
      return false; // its result is recorded; only its removal is left
    }
    trail.append(actor, run.spec.agent(), runId, new KillRequested(actor));
    return run.kill();
  }

  /** The agent of run {@code runId}, held here or stored; empty for an id no run has. */
  Optional<String> agentOf(String runId) {
    Optional<LiveRun> known = live.held(runId);
    if (known.isPresent()) {
      return Optional.of(known.get().spec.agent());
    }
    return RunIds.valid(runId) ? store.runs().find(runId).map(RunRecord::agent) : Optional.empty();
  }

  RunView view(String runId) {
    Optional<LiveRun> known = live.held(runId);
    if (known.isPresent()) {
      return RunViews.run(known.get());
    }
    RunRecord record = stored(runId);
    return RunViews.stored(
        record, store.audit(), record.isSession() ? store.steps().count(runId) : 0);
  }

  RunOutput output(String runId) {
    Optional<LiveRun> known = live.held(runId);
    if (known.isPresent()) {
      return known.get().output;
    }
    RunRecord record = stored(runId);
    // Already redacted when it was stored; a second pass with no env values changes nothing.
    RunOutput stored = new RunOutput(new Redactor(List.of()), tailBytes);
    if (record.outputTail() != null) {
      stored.append(record.outputTail().getBytes(StandardCharsets.UTF_8));
    }
    stored.close();
    return stored;
  }

  RunTimeline timeline(String runId) {
    RunRecord record = stored(runId);
    List<RecordedEvent> rows = new ArrayList<>();
    Long after = 0L;
    while (rows.size() < MAX_TIMELINE_ROWS) {
      List<AuditRow> page =
          store.audit().query(new AuditQuery(null, null, runId, null, after, AuditQuery.MAX_LIMIT));
      page.forEach(row -> rows.add(RecordedEvent.of(row)));
      if (page.size() < AuditQuery.MAX_LIMIT) {
        break;
      }
      after = page.get(page.size() - 1).id();
    }
    return new RunTimeline(
        new RunTimeline.Run(
            record.runId(),
            record.agent(),
            record.status().wireName(),
            store.runs().labels(runId),
            record.endReason(),
            record.exitStatus(),
            record.endedAt(),
            record.kind().wireName()),
        rows,
        chain.check(rows));
  }

  /**
   * The newest runs matching every given filter (null or empty: any; a null {@code kind}: both
   * kinds), newest first, among the runs of the agents {@code grant} permits only: an agent it does
   * not permit has no runs.
   */
  List<RunRecord> recent(
      AgentGrant grant,
      String agent,
      RunStatus status,
      RunKind kind,
      Instant since,
      Map<String, String> labels,
      int limit) {
    if (agent != null) {
      return grant.permits(agent)
          ? store.runs().recent(agent, status, kind, since, labels, limit)
          : List.of();
    }
    return store
        .runs()
        .recentAmong(grant.limited() ? grant.named() : null, status, kind, since, labels, limit);
  }

  boolean isLive(String runId) {
    if (live.live(runId).isPresent() || !RunIds.valid(runId)) {
      return true;
    }
    return store
        .runs()
        .find(runId)
        .map(r -> r.status().active() && r.expiresAt().isAfter(clock.instant()))
        .orElse(true);
  }
}
