package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.exception.NotFoundException;
import dev.agentsandbox.backend.SandboxException;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * The questions a sandbox asks the daemon about its containers, each answering only for the case it
 * knows: a container that is gone is "not running" and "no status"; any other failure (the daemon
 * gone, say) is thrown to the caller, never turned into an answer.
 */
final class Containers {
  /** How long (in 100 ms polls) a stopping container is waited for. */
  private static final int STOP_POLLS = 100;

  private final DockerClient client;
  private final String runId;

  Containers(DockerClient client, String runId) {
    this.client = client;
    this.runId = runId;
  }

  /** Whether the container runs; false when it is gone. */
  boolean running(String id) {
    try {
      return Boolean.TRUE.equals(client.inspectContainerCmd(id).exec().getState().getRunning());
    } catch (NotFoundException e) {
      return false;
    }
  }

  /** The container's exit status once it stopped, waiting (bounded) for a kill to take effect. */
  OptionalInt exitStatusOnceStopped(String id) throws InterruptedException {
    for (int i = 0; i < STOP_POLLS; i++) {
      InspectContainerResponse.ContainerState state;
      try {
        state = client.inspectContainerCmd(id).exec().getState();
      } catch (NotFoundException e) {
        return OptionalInt.empty();
      }
      if (!Boolean.TRUE.equals(state.getRunning())) {
        Long code = state.getExitCodeLong();
        return code == null ? OptionalInt.empty() : OptionalInt.of(code.intValue());
      }
      Thread.sleep(100);
    }
    return OptionalInt.empty();
  }

  /** Kills the container; one already stopped or gone is fine. */
  void kill(String id) {
    try {
      client.killContainerCmd(id).exec();
    } catch (RuntimeException e) {
      if (!DockerErrors.alreadyDone(e)) {
        throw new SandboxException(
            "killing container " + id + " of run " + runId + ": " + DockerErrors.describe(e), e);
      }
    }
  }

  /**
   * Stops the container (SIGTERM, then SIGKILL after {@code seconds}); one already stopped is fine.
   */
  void stop(String id, int seconds) {
    try {
      client.stopContainerCmd(id).withTimeout(seconds).exec();
    } catch (RuntimeException e) {
      if (!DockerErrors.alreadyDone(e)) {
        throw new SandboxException(
            "stopping container " + id + " of run " + runId + ": " + DockerErrors.describe(e), e);
      }
    }
  }

  /**
   * Why the daemon does not answer a ping, or empty when it does: any failure of the ping is the
   * answer to that question, and its words are kept for the message.
   */
  Optional<String> daemonSilence() {
    try {
      client.pingCmd().exec();
      return Optional.empty();
    } catch (RuntimeException e) {
      return Optional.of(DockerErrors.describe(e));
    }
  }

  /** How a stopped proxy ended (status, out of memory), for the run's end. */
  String describeExit(String id) {
    InspectContainerResponse.ContainerState state;
    try {
      state = client.inspectContainerCmd(id).exec().getState();
    } catch (NotFoundException e) {
      return "proxy container gone: " + DockerErrors.describe(e);
    }
    StringBuilder text = new StringBuilder("proxy container exited");
    if (state.getExitCodeLong() != null) {
      text.append(" with status ").append(state.getExitCodeLong());
    }
    if (Boolean.TRUE.equals(state.getOOMKilled())) {
      text.append(", out of memory");
    }
    return text.toString();
  }
}
