package dev.agentsandbox.credentials;

import java.time.Instant;
import java.util.Map;
import java.util.Objects;

/**
 * Who a credential is for: one run of one agent, until its deadline.
 *
 * @param runId the run's id
 * @param agent the agent's name
 * @param labels the run's labels
 * @param deadline the run's deadline; no credential for it may outlive this
 */
public record RunIdentity(
    String runId, String agent, Map<String, String> labels, Instant deadline) {
  public RunIdentity {
    Objects.requireNonNull(runId, "runId");
    Objects.requireNonNull(agent, "agent");
    labels = Map.copyOf(labels);
    Objects.requireNonNull(deadline, "deadline");
  }
}
