package dev.agentsandbox.testing;

import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.RunEgress;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The runs the backends' ITs launch, written once: a run id with the suite's prefix (the reapers
 * and the left-behind checks tell a suite's runs by it) and a spec of the ITs' agent.
 */
public final class ItRuns {
  /** The agent every backend IT's run belongs to. */
  public static final String AGENT = "it-agent";

  private ItRuns() {}

  /**
   * One backend's IT suite: the prefix its run ids carry, the workload image its runs use and the
   * small resource caps its tests choose when the size does not matter.
   */
  public record Suite(String prefix, String image, Resources smallCaps) {
    /** A fresh run id of this suite. */
    public String newRunId() {
      return ItRuns.newRunId(prefix);
    }

    /** A run of {@link #AGENT} on this suite's image (see {@link ItRuns#spec}). */
    public RunSpec spec(
        String runId, List<String> command, RunEgress egress, Resources resources, Duration ttl) {
      return ItRuns.spec(runId, image, command, egress, resources, ttl);
    }
  }

  /** A fresh run id: {@code prefix} and eight hex digits. */
  public static String newRunId(String prefix) {
    return prefix + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
  }

  /** A run of {@link #AGENT} on {@code image}, expiring in 30 minutes, with no environment. */
  public static RunSpec spec(
      String runId,
      String image,
      List<String> command,
      RunEgress egress,
      Resources resources,
      Duration ttl) {
    return new RunSpec(
        runId,
        AGENT,
        image,
        command,
        Map.of(),
        egress,
        resources,
        ttl,
        Instant.now().plus(Duration.ofMinutes(30)),
        false);
  }

  /** No host allowed, no instance policy, no internal destination, no inspected host. */
  public static RunEgress noEgress() {
    return new RunEgress(AllowList.EMPTY, Optional.empty(), List.of(), Map.of());
  }
}
