package dev.agentsandbox.runs;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.artifacts.ArtifactStore;
import dev.agentsandbox.artifacts.StoredArtifact;
import dev.agentsandbox.policy.event.ArtifactsExpired;
import dev.agentsandbox.runs.audit.RunTrail;
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
  private static final Logger LOG = LoggerFactory.getLogger(ArtifactRetention.class);

  private final ArtifactStore artifacts;
  private final Duration keep;
  private final RunRepository runs;
  private final RunTrail trail;
  private final Clock clock;

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
    this.trail = new RunTrail(audit);
    this.clock = Objects.requireNonNull(clock, "clock");
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
      trail.append(
          "retention",
          run.get().agent(),
          runId,
          new ArtifactsExpired(
              artifacts.describe(),
              run.get().endedAt(),
              keep.toSeconds(),
              files.size(),
              files.stream().mapToLong(StoredArtifact::size).sum()));
      deleted.add(runId);
    }
    if (!deleted.isEmpty()) {
      LOG.info("deleted the artifacts of {} runs that ended before {}", deleted.size(), cutoff);
    }
    return deleted;
  }
}
