package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.InspectExecResponse;
import com.github.dockerjava.api.exception.NotFoundException;
import dev.agentsandbox.backend.SandboxListener;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.OptionalInt;

/**
 * A command started in a running workload container through the Engine API's exec ({@code POST
 * /containers/{id}/exec}: a channel only the holder of the Docker socket has), as the workload's
 * user with the environment it is given, its output attached: a warm sandbox's run, and the shape a
 * session's steps take. Its wait follows {@link WaitState}'s table: the command's end is the
 * workload's stop. Thread-safe.
 */
final class WorkloadExec {
  /** How often the command's state is read while its output stream stays open. */
  private static final long POLL_MILLIS = 250;

  /** How long (in 20 ms polls) the daemon may take to record an ended command's status. */
  private static final int STATUS_POLLS = 50;

  private final DockerClient client;
  private final String execId;
  private final ExecOutput output;

  private WorkloadExec(DockerClient client, String execId, ExecOutput output) {
    this.client = client;
    this.execId = execId;
    this.output = output;
  }

  /**
   * Creates and starts {@code command} in {@code containerId}, its output to {@code listener}.
   * Nothing is removed when it fails: the caller decides what a failure means (a warm hand-over
   * removes the sandbox, {@link WarmDockerSandbox}; one failed step of a long-lived sandbox need
   * not).
   *
   * @throws RuntimeException the daemon's refusal, as docker-java gives it
   */
  static WorkloadExec start(
      DockerClient client,
      String containerId,
      List<String> command,
      List<String> env,
      String user,
      SandboxListener listener) {
    String execId =
        client
            .execCreateCmd(containerId)
            .withCmd(command.toArray(String[]::new))
            .withEnv(env)
            .withUser(user)
            .withAttachStdin(false)
            .withAttachStdout(true)
            .withAttachStderr(true)
            .withTty(false)
            .exec()
            .getId();
    ExecOutput output =
        client.execStartCmd(execId).withDetach(false).withTty(false).exec(new ExecOutput(listener));
    return new WorkloadExec(client, execId, output);
  }

  /**
   * Waits until the command ends, its proxy stops ({@code proxyRunning} false) or {@code until}
   * passes; the stream ends with the command, unless something it started keeps its output open, so
   * the exec's own state is read too.
   *
   * @return {@link WaitState#EXITED} (with the command's status), {@link WaitState#PROXY_DIED} or
   *     {@link WaitState#DEADLINE_PASSED}; the caller stops the container
   */
  WaitState.Outcome await(Instant until, java.util.function.BooleanSupplier proxyRunning)
      throws InterruptedException {
    WaitState.Tracker wait = new WaitState.Tracker();
    while (wait.state() == WaitState.WATCHING) {
      long left = Duration.between(Instant.now(), until).toMillis();
      if (left <= 0) {
        wait.moveTo(WaitState.DEADLINE_PASSED);
      } else if (output.awaitEnd(Math.min(POLL_MILLIS, left)) || !running()) {
        wait.moveTo(WaitState.WORKLOAD_STOPPED);
      } else if (!proxyRunning.getAsBoolean()) {
        wait.moveTo(WaitState.PROXY_STOPPED).moveTo(WaitState.PROXY_DIED);
      }
    }
    if (wait.state() != WaitState.WORKLOAD_STOPPED) {
      return new WaitState.Outcome(wait.state(), OptionalInt.empty());
    }
    OptionalInt status = exitStatus();
    return new WaitState.Outcome(wait.moveTo(WaitState.EXITED).state(), status);
  }

  /** Lets the output end (bounded) once the container was stopped, and closes it. */
  void drain(String owner) throws InterruptedException {
    output.awaitEnd(POLL_MILLIS);
    SandboxObjects.close(output, owner, "the command's output");
  }

  /** Whether the command runs; false once its exec is gone (with its container). */
  private boolean running() {
    try {
      return Boolean.TRUE.equals(client.inspectExecCmd(execId).exec().isRunning());
    } catch (NotFoundException e) {
      return false;
    }
  }

  /** The command's exit status, read (bounded) once the daemon has recorded it. */
  private OptionalInt exitStatus() throws InterruptedException {
    for (int i = 0; i < STATUS_POLLS; i++) {
      InspectExecResponse exec;
      try {
        exec = client.inspectExecCmd(execId).exec();
      } catch (NotFoundException e) {
        return OptionalInt.empty();
      }
      if (!Boolean.TRUE.equals(exec.isRunning()) && exec.getExitCodeLong() != null) {
        return OptionalInt.of(exec.getExitCodeLong().intValue());
      }
      Thread.sleep(20);
    }
    return OptionalInt.empty();
  }
}
