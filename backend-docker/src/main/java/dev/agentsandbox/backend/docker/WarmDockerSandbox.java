package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.PreparedSandbox;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxListener;
import java.io.InputStream;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A warm Docker sandbox: everything a cold run's sandbox has ({@link SandboxLauncher#cold}), with
 * the workload container running {@code sleep} instead of a command. The hand-over copies the run's
 * credentials in through the proxy's mount, then starts the run's command in the workload container
 * through the Engine API's exec (a channel only the holder of the Docker socket has: nothing in any
 * sandbox can start or steer a command there), with the run's environment, as the workload's user;
 * its output is the exec's attached stream, its exit status the exec's. When the command ends, the
 * deadline passes or the run is killed, the whole workload container is killed, so nothing the
 * command left running outlives it, and the sandbox then ends as any other ({@link
 * DockerSandbox#finish}): the same {@link WaitState} table, the command's end as the workload's
 * stop ({@link WorkloadExec}). Used once; a hand-over step that fails removes everything prepared.
 */
final class WarmDockerSandbox implements PreparedSandbox {
  private final DockerClient client;
  private final SandboxLauncher launcher;
  private final DockerSandbox base;
  private final RunSpec prepared;
  private final DockerBackendConfig config;
  private final String runtime;
  private final List<String> imageEntrypoint;
  private final HandOverListener listener;
  private final AtomicBoolean used = new AtomicBoolean();

  WarmDockerSandbox(
      DockerClient client,
      SandboxLauncher launcher,
      DockerSandbox base,
      RunSpec prepared,
      DockerBackendConfig config,
      String runtime,
      List<String> imageEntrypoint,
      HandOverListener listener) {
    this.client = client;
    this.launcher = launcher;
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
    RunLayout layout = take(run, runListener);
    LaunchSteps steps = base.handOverSteps();
    ContainerSpec agent = layout.agent(base.proxyAddress());
    List<String> command = new ArrayList<>(imageEntrypoint);
    command.addAll(run.command());
    WorkloadExec exec =
        steps.step(
            "starting the run's command in workload container " + agent.name(),
            () ->
                WorkloadExec.start(
                    client,
                    base.workloadContainerId(),
                    command,
                    agent.envList(),
                    config.workloadUser(),
                    listener));
    return new Run(exec, Instant.now().plus(cap(run.ttl())));
  }

  /**
   * Hands the sandbox to a session: the run's credentials and proxy decisions as {@link #handOver}
   * gives them, then the step runner (copied in when the sandbox was prepared, {@link
   * SessionRunner}) started by exec with the run's environment instead of a command.
   */
  @Override
  public dev.agentsandbox.backend.session.SessionSandbox handOverSession(
      RunSpec run, SandboxListener runListener) {
    RunLayout layout = take(run, runListener);
    return DockerSession.open(
        client,
        base,
        layout.agent(base.proxyAddress()).envList(),
        config.workloadUser(),
        Instant.now().plus(cap(run.ttl())));
  }

  /**
   * Takes the sandbox for {@code run}, once: refuses a run it was not prepared for (removing
   * everything), copies the run's credentials in, bounds the outputs by the run's and hands the
   * proxy's decisions over to the run's listener.
   */
  private RunLayout take(RunSpec run, SandboxListener runListener) {
    Objects.requireNonNull(runListener, "runListener");
    if (!used.compareAndSet(false, true)) {
      throw new IllegalStateException(
          "handing over warm sandbox " + prepared.runId() + ": it was already used or discarded");
    }
    List<String> differs = differences(run);
    if (!differs.isEmpty()) {
      List<String> left = base.removeAll();
      IllegalArgumentException refused =
          new IllegalArgumentException(
              "handing over warm sandbox "
                  + prepared.runId()
                  + " to run "
                  + run.runId()
                  + ": it was prepared with another "
                  + String.join(", ", differs));
      if (!left.isEmpty()) {
        refused.addSuppressed(
            new IllegalStateException("left for the reaper: " + String.join("; ", left)));
      }
      throw refused;
    }
    RunLayout layout = new RunLayout(run, config, runtime);
    LaunchSteps steps = base.handOverSteps();
    if (!run.credentials().isEmpty()) {
      Delivery credentials = layout.files().credentialsDelivery();
      steps.run(credentials.step(), () -> launcher.copyInto(base.proxyContainerId(), credentials));
    }
    base.outputArchive().limitTo(run.outputs());
    listener.handOver(runListener);
    return layout;
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

  /** The run in the warm sandbox, from the hand-over on. */
  private final class Run implements Sandbox {
    private final WorkloadExec exec;
    private final Instant hardDeadline;

    Run(WorkloadExec exec, Instant hardDeadline) {
      this.exec = exec;
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
      WaitState.Outcome outcome = exec.await(until, base::proxyRunning);
      // Whatever the command left running goes with the container.
      base.stopWorkload();
      exec.drain("run " + prepared.runId());
      return base.finish(outcome, until);
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
