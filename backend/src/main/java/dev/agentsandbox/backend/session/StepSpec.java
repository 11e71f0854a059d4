package dev.agentsandbox.backend.session;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * One step of a session as the backend runs it: already checked and screened by the run service.
 * The step runs as the workload's user, in the session's sandbox, with the session's own
 * environment (its proxy variables, credentials and {@code env}) overlaid by {@link #env}, in
 * {@link #cwd}, which the backend enters without following a symbolic link.
 *
 * @param number the step's number in its session, from 1
 * @param command the argument vector; the image's entrypoint is not prepended
 * @param env variables for this step only, screened like a run's
 * @param cwd the folder the step starts in
 * @param stdin what the step reads on its standard input, then end of file; empty for none
 */
public record StepSpec(
    int number, List<String> command, Map<String, String> env, WorkspacePath cwd, byte[] stdin) {
  public StepSpec {
    if (number < 1) {
      throw new IllegalArgumentException("step number must be at least 1");
    }
    command = List.copyOf(command);
    if (command.isEmpty()) {
      throw new IllegalArgumentException("command is empty");
    }
    env = Map.copyOf(env);
    Objects.requireNonNull(cwd, "cwd");
    stdin = stdin == null ? new byte[0] : stdin.clone();
  }

  @Override
  public byte[] stdin() {
    return stdin.clone();
  }
}
