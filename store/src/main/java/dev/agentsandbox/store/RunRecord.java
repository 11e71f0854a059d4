package dev.agentsandbox.store;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.store.internal.Columns;
import java.time.Instant;
import java.util.Objects;

/**
 * One run as stored: identity, where it runs, its state and outcome. Times are truncated to the
 * millisecond, which is what the store keeps.
 *
 * <p>A session ({@link RunKind#SESSION}) has a JSON {@code null} command (each step has its own)
 * and its {@code idleSeconds}; a one-shot run has neither an idle time nor a null command.
 */
public record RunRecord(
    String runId,
    String agent,
    String backend,
    String runtime,
    RunStatus status,
    JsonNode command,
    Instant createdAt,
    Instant startedAt,
    Instant endedAt,
    Integer exitStatus,
    String endReason,
    String outputTail,
    Instant expiresAt,
    String owner,
    RunKind kind,
    Integer idleSeconds) {

  public RunRecord {
    Objects.requireNonNull(runId, "runId");
    Objects.requireNonNull(agent, "agent");
    Objects.requireNonNull(backend, "backend");
    Objects.requireNonNull(status, "status");
    Objects.requireNonNull(command, "command");
    Objects.requireNonNull(createdAt, "createdAt");
    if (runId.isBlank()) {
      throw new IllegalArgumentException("run id must not be blank");
    }
    Objects.requireNonNull(kind, "kind");
    if (kind == RunKind.RUN && idleSeconds != null) {
      throw new IllegalArgumentException("a one-shot run has no idle time");
    }
    if (kind == RunKind.SESSION && (idleSeconds == null || idleSeconds < 1)) {
      throw new IllegalArgumentException("a session needs an idle time of at least one second");
    }
    command = command.deepCopy();
    // The columns hold milliseconds; truncating here makes a record equal to itself read back.
    createdAt = Columns.millis(createdAt);
    startedAt = Columns.millis(startedAt);
    endedAt = Columns.millis(endedAt);
    expiresAt = Columns.millis(expiresAt);
  }

  /** A one-shot run's record. */
  public RunRecord(
      String runId,
      String agent,
      String backend,
      String runtime,
      RunStatus status,
      JsonNode command,
      Instant createdAt,
      Instant startedAt,
      Instant endedAt,
      Integer exitStatus,
      String endReason,
      String outputTail,
      Instant expiresAt,
      String owner) {
    this(
        runId,
        agent,
        backend,
        runtime,
        status,
        command,
        createdAt,
        startedAt,
        endedAt,
        exitStatus,
        endReason,
        outputTail,
        expiresAt,
        owner,
        RunKind.RUN,
        null);
  }

  /** Whether this is a session. */
  public boolean isSession() {
    return kind == RunKind.SESSION;
  }

  /** This run once its workload started under {@code runtime} at {@code at}. */
  public RunRecord started(String runtime, Instant at) {
    return new RunRecord(
        runId,
        agent,
        backend,
        runtime,
        RunStatus.RUNNING,
        command,
        createdAt,
        at,
        null,
        null,
        null,
        null,
        expiresAt,
        owner,
        kind,
        idleSeconds);
  }

  /**
   * This run once it ended.
   *
   * @param outcome the state it ended in
   * @param at when it ended
   * @param exit the workload's exit status, or null when there was none
   * @param reason how it ended ({@code exit}, {@code deadline}, {@code killed}, {@code error}; a
   *     session's {@code closed} or {@code idle})
   * @param tail its redacted output tail (the stored one is kept when null)
   */
  public RunRecord ended(RunStatus outcome, Instant at, Integer exit, String reason, String tail) {
    return new RunRecord(
        runId,
        agent,
        backend,
        runtime,
        outcome,
        command,
        createdAt,
        startedAt,
        at,
        exit,
        reason,
        tail == null ? outputTail : tail,
        expiresAt,
        owner,
        kind,
        idleSeconds);
  }
}
