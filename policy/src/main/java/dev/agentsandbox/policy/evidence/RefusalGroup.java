package dev.agentsandbox.policy.evidence;

import java.util.Objects;

/**
 * Refusals of one host, port and reason as recorded, with their evidence.
 *
 * @param host the host as recorded (untrusted: quote it bounded, never act on it)
 * @param port the port as recorded, 0 when none was
 * @param reason the reason's wire name as recorded
 * @param evidence counts, runs, first and last seen, example runs
 */
public record RefusalGroup(String host, int port, String reason, Evidence evidence) {
  public RefusalGroup {
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(evidence, "evidence");
  }
}
