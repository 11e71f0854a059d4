package dev.agentsandbox.runs;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.artifacts.ArtifactStore;
import dev.agentsandbox.artifacts.StoredArtifact;
import dev.agentsandbox.store.AuditEvent;
import dev.agentsandbox.store.AuditLog;
import dev.agentsandbox.store.RunRecord;
import dev.agentsandbox.store.RunRepository;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deletes the artifacts of runs that ended longer ago than the operator keeps them ({@code serve
 * --artifacts-retention}), each deletion audited as {@code agent_sandbox.artifacts.expired} with
 * what was deleted. A run still live, or one this control plane's store does not know (another
 * installation sharing the bucket, a store that was reset), is never touched.
 */
public final class ArtifactRetention {
  static final String EXPIRED = "agent_sandbox.artifacts.expired";
  private static final Logger LOG = LoggerFactory.getLogger(ArtifactRetention.class);

  private final ArtifactStore artifacts;
  private final Duration keep;
  private final RunRepository runs;
  private final AuditLog audit;
  private final Clock clock;
  private final ObjectMapper json;

  public ArtifactRetention(
      ArtifactStore artifacts,
      Duration keep,
      RunRepository runs,
      AuditLog audit,
      Clock clock,
      ObjectMapper json) {
    this.artifacts = Objects.requireNonNull(artifacts, "artifacts");
    if (keep.isNegative() || keep.isZero()) {
      throw new IllegalArgumentException("artifact retention must be positive: " + keep);
    }
    this.keep = keep;
    this.runs = Objects.requireNonNull(runs, "runs");
    this.audit = Objects.requireNonNull(audit, "audit");
    this.clock = Objects.requireNonNull(clock, "clock");
    this.json = Objects.requireNonNull(json, "json");
  }

  /** One pass; returns the runs whose artifacts were deleted. */
  public List<String> sweep() {
    Instant cutoff = clock.instant().minus(keep);
    List<String> deleted = new ArrayList<>();
    for (String runId : artifacts.runIds()) {
      Optional<RunRecord> run = runs.find(runId);
      if (run.isEmpty() || run.get().endedAt() == null || !run.get().endedAt().isBefore(cutoff)) {
        continue;
      }
      List<StoredArtifact> files = artifacts.list(runId);
      artifacts.deleteRun(runId);
      ObjectNode data = json.createObjectNode();
      data.put("store", artifacts.describe());
      data.put("ended_at", run.get().endedAt().toString());
      data.put("retention_seconds", keep.toSeconds());
      data.put("files", files.size());
      data.put("bytes", files.stream().mapToLong(StoredArtifact::size).sum());
      audit.append(new AuditEvent(EXPIRED, "retention", run.get().agent(), runId, data));
      deleted.add(runId);
    }
    if (!deleted.isEmpty()) {
      LOG.info("deleted the artifacts of {} runs that ended before {}", deleted.size(), cutoff);
    }
    return deleted;
  }
}
