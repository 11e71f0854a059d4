package dev.agentsandbox.runs;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What an administrator asks to run: which agent, which command, which environment and labels.
 *
 * @param agent the agent's name, as configured
 * @param command the argument vector
 * @param env variables for the workload; screened before anything is created
 * @param labels the run's labels (owner, task reference, ...), checked before anything is created
 *     and applied to every object and audit row of the run
 */
public record RunRequest(
    String agent, List<String> command, Map<String, String> env, Map<String, String> labels) {
  /** Most arguments one command may have. */
  public static final int MAX_ARGUMENTS = 256;

  /** Longest single argument, in characters. */
  public static final int MAX_ARGUMENT_LENGTH = 32 * 1024;

  public RunRequest {
    Objects.requireNonNull(agent, "agent");
    command = List.copyOf(command);
    env = Map.copyOf(env);
    labels = Map.copyOf(labels);
  }

  /** A request without labels. */
  public RunRequest(String agent, List<String> command, Map<String, String> env) {
    this(agent, command, env, Map.of());
  }
}
