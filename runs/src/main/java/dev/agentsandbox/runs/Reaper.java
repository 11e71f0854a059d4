package dev.agentsandbox.runs;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.backend.ReapReport;
import dev.agentsandbox.backend.SandboxBackend;
import dev.agentsandbox.policy.event.Reaped;
import dev.agentsandbox.runs.audit.RunTrail;
import dev.agentsandbox.store.AuditLog;
import java.time.Clock;
import java.util.List;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Removes what runs left behind: at start-up and then periodically, each backend deletes its
 * labelled resources whose run is over or whose expiry passed. Each removal is audited as an {@code
 * agent_sandbox.teardown} row by the reaper. Where several replicas serve, {@code isLeader} lets
 * only one of them reap at a time.
 */
public final class Reaper {
  private static final Logger LOG = LoggerFactory.getLogger(Reaper.class);

  private final List<SandboxBackend> backends;
  private final Predicate<String> isLive;
  private final RunTrail trail;
  private final Clock clock;

  public Reaper(
      List<SandboxBackend> backends,
      Predicate<String> isLive,
      AuditLog audit,
      Clock clock,
      ObjectMapper json) {
    this.backends = List.copyOf(backends);
    this.isLive = isLive;
    this.trail = new RunTrail(audit);
    this.clock = clock;
  }

  /** One pass over every backend that is available here; returns how many runs were reaped. */
  public int reapOnce() {
    int reaped = 0;
    for (SandboxBackend backend : backends) {
      if (!backend.probe().available()) {
        continue;
      }
      ReapReport report;
      try {
        report = backend.reap(clock.instant(), isLive);
      } catch (RuntimeException e) {
        LOG.warn("reaping {} failed: {}", backend.name(), e.getMessage());
        continue;
      }
      for (String runId : report.removedRunIds()) {
        trail.append("reaper", null, runId, new Reaped(backend.name()));
        reaped++;
      }
      for (String problem : report.problems()) {
        LOG.warn("reaping {}: {}", backend.name(), problem);
      }
    }
    return reaped;
  }
}
