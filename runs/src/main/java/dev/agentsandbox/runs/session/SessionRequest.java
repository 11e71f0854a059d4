package dev.agentsandbox.runs.session;

import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;

/**
 * What an administrator asks to open: which agent, the session's environment and labels (the rules
 * of a run request), and how long it may sit idle.
 *
 * @param agent the agent's name, as configured
 * @param env variables every step of the session gets; screened before anything is created
 * @param labels the session's labels, applied to every object and audit row of it
 * @param idleSeconds how long without a step or a file operation ends it; empty: 300, or the
 *     agent's ttl when that is shorter
 */
public record SessionRequest(
    String agent, Map<String, String> env, Map<String, String> labels, OptionalInt idleSeconds) {
  /** The idle time a session gets when its request names none (or the ttl, when shorter). */
  public static final int DEFAULT_IDLE_SECONDS = 300;

  public SessionRequest {
    Objects.requireNonNull(agent, "agent");
    env = Map.copyOf(env);
    labels = Map.copyOf(labels);
    Objects.requireNonNull(idleSeconds, "idleSeconds");
  }
}
