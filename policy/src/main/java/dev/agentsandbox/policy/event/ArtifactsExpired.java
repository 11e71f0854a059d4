package dev.agentsandbox.policy.event;

import java.time.Instant;
import java.util.Map;
import java.util.Objects;

/**
 * {@code agent_sandbox.artifacts.expired}: the run's artifacts were deleted under the operator's
 * retention ({@code serve --artifacts-retention}).
 *
 * @param store the store they were deleted from
 * @param endedAt when the run ended
 * @param retentionSeconds how long artifacts are kept
 * @param files how many files were deleted
 * @param bytes how many bytes
 */
public record ArtifactsExpired(
    String store, Instant endedAt, long retentionSeconds, long files, long bytes)
    implements RunEvent {
  public ArtifactsExpired {
    Objects.requireNonNull(store, "store");
    Objects.requireNonNull(endedAt, "endedAt");
  }

  @Override
  public EventType type() {
    return EventType.ARTIFACTS_EXPIRED;
  }

  @Override
  public Map<String, Object> toTree() {
    return Fields.tree()
        .put("store", store)
        .put("ended_at", endedAt.toString())
        .put("retention_seconds", retentionSeconds)
        .put("files", files)
        .put("bytes", bytes)
        .build();
  }

  static ArtifactsExpired read(Object data) {
    Fields f = Fields.of(EventType.ARTIFACTS_EXPIRED, data);
    ArtifactsExpired event =
        new ArtifactsExpired(
            f.string("store"),
            f.instant("ended_at"),
            f.whole("retention_seconds"),
            f.whole("files"),
            f.whole("bytes"));
    f.done();
    return event;
  }
}
