package dev.agentsandbox.policy.event;

import java.util.Map;
import java.util.Optional;

/**
 * One thing a run records in the audit log: its row type and its data, in one type per kind. The
 * only way a run's audit row is written ({@link #toTree()}) and read ({@link #read}); the test
 * {@code RunEventVocabularyTest} fails when a row type or field is written or read anywhere else.
 *
 * <p>Implementations are immutable records, thread-safe; each has a static {@code read(Object)}
 * that {@link #read} dispatches to.
 */
public sealed interface RunEvent
    permits Launched,
        Refused,
        CredentialsIssued,
        CredentialsRevoked,
        Started,
        EgressRecorded,
        EgressDenialsCounted,
        KillRequested,
        TimedOut,
        Failed,
        RuntimeMismatched,
        ProxyDied,
        ArtifactsCollected,
        ArtifactsNotCollected,
        ArtifactsExpired,
        TornDown,
        Reaped,
        StepStarted,
        StepEnded,
        FilesTransferred,
        StepKillRequested,
        StepRefused,
        SessionClosed,
        SessionIdled {

  /** The row type this event is written as. */
  EventType type();

  /**
   * The row's data as plain values (maps in field order, lists, strings, numbers, booleans and
   * {@code null}), for a JSON library to write. The store sorts the keys when it stores the row.
   */
  Map<String, Object> toTree();

  /**
   * Reads a row's data by its row type; empty for a type that is not a run event (a configuration
   * change, a token, a type of a newer version).
   *
   * @param data the row's data parsed into plain values
   * @throws InvalidEventException when the type is a run event's and its data does not read as one
   */
  static Optional<RunEvent> read(String type, Object data) {
    Optional<EventType> known = EventType.fromWireName(type);
    if (known.isEmpty()) {
      return Optional.empty();
    }
    return Optional.of(
        switch (known.get()) {
          case LAUNCH -> Launched.read(data);
          case REFUSED -> Refused.read(data);
          case CREDENTIALS_ISSUE -> CredentialsIssued.read(data);
          case CREDENTIALS_REVOKE -> CredentialsRevoked.read(data);
          case STARTED -> Started.read(data);
          case EGRESS_ALLOW -> EgressRecorded.read(true, data);
          case EGRESS_DENY -> EgressRecorded.read(false, data);
          case EGRESS_DENY_COUNTED -> EgressDenialsCounted.read(data);
          case KILL -> KillRequested.read(data);
          case TIMEOUT -> TimedOut.read(data);
          case FAILURE -> Failed.read(data);
          case RUNTIME_MISMATCH -> RuntimeMismatched.read(data);
          case PROXY_DIED -> ProxyDied.read(data);
          case ARTIFACTS ->
              Fields.peek(data, "collected") instanceof Boolean collected && collected
                  ? ArtifactsCollected.read(data)
                  : ArtifactsNotCollected.read(data);
          case ARTIFACTS_EXPIRED -> ArtifactsExpired.read(data);
          case TEARDOWN ->
              Reaped.BY.equals(Fields.peek(data, "by")) ? Reaped.read(data) : TornDown.read(data);
          case EXEC_START -> StepStarted.read(data);
          case EXEC -> StepEnded.read(data);
          case FILES -> FilesTransferred.read(data);
          case STEP_KILL -> StepKillRequested.read(data);
          case EXEC_REFUSED -> StepRefused.read(data);
          case CLOSE -> SessionClosed.read(data);
          case IDLE -> SessionIdled.read(data);
        });
  }
}
