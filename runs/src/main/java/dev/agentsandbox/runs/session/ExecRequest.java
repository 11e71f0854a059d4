package dev.agentsandbox.runs.session;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * One step a client asks a session to run, as read from the request (checked by the run service:
 * the command's shape, the environment screen, the folder, the stdin and time-out caps).
 *
 * @param command the argument vector, run as is (no shell)
 * @param env this step's variables over the session's own
 * @param cwd the folder to start in, {@code /workspace/...} or relative to it
 * @param stdin UTF-8 text the step reads on its standard input, then end of file
 * @param timeoutSeconds when to kill it, 1 to {@value #MAX_TIMEOUT_SECONDS}; never past the
 *     session's deadline
 * @param background whether to answer at once and let it run on
 */
public record ExecRequest(
    List<String> command,
    Map<String, String> env,
    String cwd,
    String stdin,
    int timeoutSeconds,
    boolean background) {
  /** A step's time-out when its request names none. */
  public static final int DEFAULT_TIMEOUT_SECONDS = 300;

  /** The longest time-out a step may ask for: four hours, a session's hard cap. */
  public static final int MAX_TIMEOUT_SECONDS = 4 * 60 * 60;

  public ExecRequest {
    command = List.copyOf(command);
    env = Map.copyOf(env);
    Objects.requireNonNull(cwd, "cwd");
    Objects.requireNonNull(stdin, "stdin");
  }

  /** How many bytes of stdin the step is given, in UTF-8. */
  public int stdinBytes() {
    return stdin.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
  }
}
