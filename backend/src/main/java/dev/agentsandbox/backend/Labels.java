package dev.agentsandbox.backend;

import java.time.Instant;
import java.util.Map;

/**
 * Label keys on everything a backend creates. Values are valid Kubernetes label values and Docker
 * label values alike (the expiry is epoch seconds because label values may not hold a colon).
 */
public final class Labels {
  /** The run's id. */
  public static final String RUN_ID = "agent-sandbox.dev/run-id";

  /** The agent's name. */
  public static final String AGENT = "agent-sandbox.dev/agent";

  /** When the run's resources may be reaped, in epoch seconds. */
  public static final String EXPIRES_AT = "agent-sandbox.dev/expires-at";

  /**
   * The control plane that created a resource on a daemon shared with others: its store's identity.
   * A reaper removes another control plane's resources only once their expiry has passed.
   */
  public static final String INSTANCE = "agent-sandbox.dev/instance";

  /** Marks a resource as ours; the reaper never touches anything without it. */
  public static final String MANAGED_BY = "app.kubernetes.io/managed-by";

  /** The value of {@link #MANAGED_BY}. */
  public static final String MANAGER = "agent-sandbox";

  private Labels() {}

  /**
   * Whether {@code key} is one of the sandbox's own label keys (or in its {@code
   * agent-sandbox.dev/} prefix), which a run request may not set.
   */
  public static boolean isReserved(String key) {
    return key.startsWith("agent-sandbox.dev/") || key.equals(MANAGED_BY);
  }

  /** The labels of one run's resources. */
  public static Map<String, String> forRun(String runId, String agent, Instant expiresAt) {
    return Map.of(
        RUN_ID,
        runId,
        AGENT,
        agent,
        EXPIRES_AT,
        Long.toString(expiresAt.getEpochSecond()),
        MANAGED_BY,
        MANAGER);
  }

  /** The expiry a resource's labels carry, or {@link Instant#MIN} when it is missing or garbled. */
  public static Instant expiresAt(Map<String, String> labels) {
    String value = labels.get(EXPIRES_AT);
    if (value == null) {
      return Instant.MIN;
    }
    try {
      return Instant.ofEpochSecond(Long.parseLong(value));
    } catch (NumberFormatException e) {
      return Instant.MIN;
    }
  }
}
