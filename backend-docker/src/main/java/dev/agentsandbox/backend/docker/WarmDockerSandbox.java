package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.InspectExecResponse;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.PreparedSandbox;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import java.io.InputStream;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A warm Docker sandbox: everything {@link DockerSandbox#start} creates, with the workload
 * container running {@code sleep} instead of a command. The hand-over copies the run's credentials
 * in through the proxy's mount, then starts the run's command in the workload container through the
 * Engine API's exec (a channel only the holder of the Docker socket has: nothing in any sandbox can
 * start or steer a command there), with the run's environment, as the workload's user; its output
 * is the exec's attached stream, its exit status the exec's. When the command ends, the deadline
 * passes or the run is killed, the whole workload container is killed, so nothing the command left
 * running outlives it, and the sandbox then ends as any other ({@link DockerSandbox#ended}). Used
 * once.
 */
final class WarmDockerSandbox implements PreparedSandbox {
  /** How often the command's state is read while its output stream stays open. */
  private static final long POLL_MILLIS = 250;

  private final DockerClient client;
  private final DockerSandbox base;
  private final RunSpec prepared;
  private final DockerBackendConfig config;
  private final String runtime;
  private final List<String> imageEntrypoint;
  private final HandOverListener listener;
  private final AtomicBoolean used = new AtomicBoolean();

  WarmDockerSandbox(
      DockerClient client,
      DockerSandbox base,
      RunSpec prepared,
      DockerBackendConfig config,
      String runtime,
      List<String> imageEntrypoint,
      HandOverListener listener) {
    this.client = client;
    this.base = base;
    this.prepared = prepared;
    this.config = config;
    this.runtime = runtime;
    this.imageEntrypoint = List.copyOf(imageEntrypoint);
    this.listener = listener;
  }

  @Override
  public String runId() {
    return prepared.runId();
  }

  /** The prepared sandbox, for tests that look inside it. */
  DockerSandbox base() {
    return base;
  }

  @Override
  public Sandbox handOver(RunSpec run, SandboxListener runListener) {
    Objects.requireNonNull(runListener, "runListener");
    if (!used.compareAndSet(false, true)) {
      throw new IllegalStateException(
          "handing over warm sandbox " + prepared.runId() + ": it was already used or discarded");
    }
    List<String> differs = differences(run);
    if (!differs.isEmpty()) {
      teardownQuietly();
      throw new IllegalArgumentException(
          "handing over warm sandbox "
              + prepared.runId()
              + " to run "
              + run.runId()
              + ": it was prepared with another "
              + String.join(", ", differs));
    }
    String step = "delivering the credentials";
    try {
      RunLayout layout = new RunLayout(run, config, runtime);
      if (!run.credentials().isEmpty()) {
        base.copyInto(
            base.proxyContainerId(), RunLayout.PROXY_CREDENTIALS, layout.credentialsArchive());
      }
      ContainerSpec agent = layout.agent(base.proxyAddress());
      List<String> command = new ArrayList<>(imageEntrypoint);
      command.addAll(run.command());
      step = "creating the command in workload container " + agent.name();
      String execId =
          client
              .execCreateCmd(base.workloadContainerId())
              .withCmd(command.toArray(String[]::new))
              .withEnv(agent.envList())
              .withUser(config.workloadUser())
              .withAttachStdin(false)
              .withAttachStdout(true)
              .withAttachStderr(true)
              .withTty(false)
              .exec()
              .getId();
      listener.handOver(runListener);
      step = "starting the command in workload container " + agent.name();
      ExecOutput output =
          client
              .execStartCmd(execId)
              .withDetach(false)
              .withTty(false)
              .exec(new ExecOutput(listener));
      return new Run(execId, output, Instant.now().plus(cap(run.ttl())));
    } catch (RuntimeException e) {
      teardownQuietly();
      throw new UnableToLaunchSandboxException(
          "handing over warm sandbox "
              + prepared.runId()
              + ": "
              + step
              + ": "
              + DockerErrors.describe(e),
          e);
    }
  }

  private static Duration cap(Duration ttl) {
    return ttl.compareTo(DockerBackend.MAX_TTL) > 0 ? DockerBackend.MAX_TTL : ttl;
  }

  /** What the run would get that this sandbox was not prepared with; empty when it may take it. */
  private List<String> differences(RunSpec run) {
    List<String> differs = new ArrayList<>();
    if (!run.runId().equals(prepared.runId())) {
      differs.add("run id");
    }
    if (!run.agent().equals(prepared.agent())) {
      differs.add("agent");
    }
    if (!run.image().equals(prepared.image())) {
      differs.add("image");
    }
    if (!run.egress().equals(prepared.egress())) {
      differs.add("egress policy");
    }
    if (!run.resources().equals(prepared.resources())) {
      differs.add("resources");
    }
    if (!run.ttl().equals(prepared.ttl())) {
      differs.add("ttl");
    }
    if (run.requireRuntimeClass() != prepared.requireRuntimeClass()) {
      differs.add("runtime requirement");
    }
    if (!run.expiresAt().equals(prepared.expiresAt())) {
      differs.add("expiry");
    }
    if (!run.runLabels().isEmpty()) {
      differs.add("labels (a warm sandbox's objects carry none)");
    }
    return differs;
  }

  @Override
  public void discard() {
    if (used.compareAndSet(false, true)) {
      base.teardown();
    }
  }

  private void teardownQuietly() {
    try {
      base.teardown();
    } catch (RuntimeException ignored) {
      // The hand-over's error is the one to report; the reaper removes what is left by label.
    }
  }

  /** The run in the warm sandbox, from the hand-over on. */
  private final class Run implements Sandbox {
    private final String execId;
    private final ExecOutput output;
    private final Instant hardDeadline;

    Run(String execId, ExecOutput output, Instant hardDeadline) {
      this.execId = execId;
      this.output = output;
      this.hardDeadline = hardDeadline;
    }

    @Override
    public String runId() {
      return prepared.runId();
    }

    @Override
    public String runtime() {
      return runtime;
    }

    /** The image the prepared workload container was created from, resolved at preparation. */
    @Override
    public Optional<String> imageId() {
      return base.imageId();
    }

    @Override
    public Completion await(Instant deadline) throws InterruptedException {
      Instant until = deadline.isBefore(hardDeadline) ? deadline : hardDeadline;
      boolean ended = false;
      boolean proxyStopped = false;
      while (Instant.now().isBefore(until)) {
        long left = Duration.between(Instant.now(), until).toMillis();
        // The stream ends with the command, unless something it started keeps its output open;
        // the exec's own state says when the command itself has exited.
        if (output.awaitEnd(Math.max(1, Math.min(POLL_MILLIS, left))) || !running()) {
          ended = true;
          break;
        }
        if (!base.proxyRunning()) {
          proxyStopped = true;
          break;
        }
      }
      OptionalInt status = ended ? exitStatus() : OptionalInt.empty();
      base.stopWorkload();
      output.awaitEnd(POLL_MILLIS);
      closeQuietly();
      return proxyStopped ? base.proxyDied(status) : base.ended(ended, status, until);
    }

    private boolean running() {
      try {
        return Boolean.TRUE.equals(client.inspectExecCmd(execId).exec().isRunning());
      } catch (RuntimeException e) {
        return false;
      }
    }

    /** The command's exit status, read (bounded) once the daemon has recorded it. */
    private OptionalInt exitStatus() throws InterruptedException {
      for (int i = 0; i < 50; i++) {
        InspectExecResponse exec;
        try {
          exec = client.inspectExecCmd(execId).exec();
        } catch (RuntimeException e) {
          return OptionalInt.empty();
        }
        if (!Boolean.TRUE.equals(exec.isRunning()) && exec.getExitCodeLong() != null) {
          return OptionalInt.of(exec.getExitCodeLong().intValue());
        }
        Thread.sleep(20);
      }
      return OptionalInt.empty();
    }

    private void closeQuietly() {
      try {
        output.close();
      } catch (java.io.IOException | RuntimeException ignored) {
        // The stream has ended or its container is gone; nothing to recover.
      }
    }

    @Override
    public Optional<InputStream> outputs() {
      return base.outputs();
    }

    @Override
    public void kill() {
      base.kill();
    }

    @Override
    public void teardown() {
      base.teardown();
    }
  }
}
