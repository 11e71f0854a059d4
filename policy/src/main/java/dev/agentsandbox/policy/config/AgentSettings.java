package dev.agentsandbox.policy.config;

import dev.agentsandbox.policy.AllowList;
import java.util.Objects;

/**
 * One agent's sandbox settings.
 *
 * @param allow the sandbox allow-list (narrowed further by the instance egress policy)
 * @param image the container image the workload runs in
 * @param scope the instance egress policy scope that applies to this agent
 * @param ttlSeconds the run's deadline, from 1 to {@value #MAX_TTL_SECONDS}
 * @param resources resource limits
 */
public record AgentSettings(
    AllowList allow, String image, String scope, int ttlSeconds, Resources resources) {
  /** The hard cap on a run's lifetime: four hours. */
  public static final int MAX_TTL_SECONDS = 4 * 60 * 60;

  /** The deadline an agent gets when its configuration names none. */
  public static final int DEFAULT_TTL_SECONDS = 900;

  /** The image an agent gets when its configuration names none. */
  public static final String DEFAULT_IMAGE = "agent-sandbox/workload:latest";

  public AgentSettings {
    Objects.requireNonNull(allow, "allow");
    Objects.requireNonNull(image, "image");
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(resources, "resources");
    if (ttlSeconds < 1 || ttlSeconds > MAX_TTL_SECONDS) {
      throw new IllegalArgumentException("ttl_seconds out of range: " + ttlSeconds);
    }
  }
}
