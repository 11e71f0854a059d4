package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.RunContract;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxException;
import dev.agentsandbox.backend.UnableToTearDownSandboxException;
import java.io.InputStream;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One run's sandbox on a Docker daemon, once it is built ({@link SandboxLauncher}): its proxy and
 * workload running, everything it created recorded in its {@link SandboxObjects}. Waits for the
 * workload through {@link ContainerWatch} ({@link WaitState}'s table), collects {@link
 * RunContract#OUT_DIR} into its {@link OutputArchive}, and removes everything at teardown.
 * Thread-safe as {@link Sandbox} requires.
 */
final class DockerSandbox implements Sandbox {
  /** How long the workload's and the proxy's output may take to drain once they stopped. */
  private static final long DRAIN_MILLIS = 10_000;

  /** How long the proxy is given to stop by itself (and write its last decisions) at the end. */
  private static final int PROXY_STOP_SECONDS = 2;

  /** The run's workload container, created and started. */
  record Workload(String containerId, String name, String imageId, WorkloadOutput output) {}

  private final DockerClient client;
  private final Containers containers;
  private final String runId;
  private final String runtime;
  private final SandboxObjects objects;
  private final FenceBuilder.StartedProxy proxy;
  private final Workload workload;
  private final OutputArchive outputs;
  private final Instant hardDeadline;
  private final Optional<String> pooledProxy;
  private final Runnable afterTeardown;
  private final AtomicBoolean killed = new AtomicBoolean();

  /**
   * @param pooledProxy the proxy-pool standby the sandbox was built on, if it was
   * @param afterTeardown run after each teardown, whatever it removed (the proxy pool forgets the
   *     standby the run took)
   */
  DockerSandbox(
      DockerClient client,
      String runId,
      String runtime,
      SandboxObjects objects,
      FenceBuilder.StartedProxy proxy,
      Workload workload,
      OutputArchive outputs,
      Instant hardDeadline,
      Optional<String> pooledProxy,
      Runnable afterTeardown) {
    this.client = client;
    this.containers = new Containers(client, runId);
    this.runId = runId;
    this.runtime = runtime;
    this.objects = objects;
    this.proxy = proxy;
    this.workload = workload;
    this.outputs = outputs;
    this.hardDeadline = hardDeadline;
    this.pooledProxy = pooledProxy;
    this.afterTeardown = afterTeardown;
  }

  /** The workload container's id, for operators and tests that look inside the sandbox. */
  String workloadContainerId() {
    return workload.containerId();
  }

  /** The workload container's name. */
  String workloadName() {
    return workload.name();
  }

  /** The proxy container's id. */
  String proxyContainerId() {
    return proxy.containerId();
  }

  /** The proxy's address on the private network, where it listens. */
  String proxyAddress() {
    return proxy.address();
  }

  /** The collection of the run's outputs (a warm sandbox's hand-over bounds it by the run's). */
  OutputArchive outputArchive() {
    return outputs;
  }

  @Override
  public String runId() {
    return runId;
  }

  @Override
  public String runtime() {
    return runtime;
  }

  @Override
  public Optional<String> imageId() {
    return Optional.ofNullable(workload.imageId());
  }

  @Override
  public Optional<String> pooledProxy() {
    return pooledProxy;
  }

  /** The earlier of {@code deadline} and the sandbox's own hard deadline (its capped ttl). */
  Instant until(Instant deadline) {
    return deadline.isBefore(hardDeadline) ? deadline : hardDeadline;
  }

  @Override
  public Completion await(Instant deadline) throws InterruptedException {
    Instant until = until(deadline);
    WaitState.Outcome outcome;
    try {
      outcome =
          new ContainerWatch(
                  client, runId, workload.containerId(), proxy.containerId(), killed::get)
              .await(until);
    } catch (RuntimeException e) {
      Optional<String> silence = containers.daemonSilence();
      if (silence.isEmpty()) {
        throw e;
      }
      // Without live-restore a stopping daemon stops every container with it: the run is over.
      throw new SandboxException(
          "the Docker daemon went away during the run (stopped or restarted; it stops the run's"
              + " containers with it, and the reaper removes what is left once it is back): "
              + DockerErrors.describe(e)
              + " (ping: "
              + silence.get()
              + ")",
          e);
    }
    return finish(outcome, until);
  }

  /**
   * Ends the run as the wait ended: the proxy's state read first when it stopped first, the outputs
   * collected while the proxy still holds the workspace, the proxy stopped so that its last
   * decisions are written, both outputs drained; then the {@link Completion}, {@code KILLED} when
   * an operator's kill came first.
   *
   * @throws SandboxException when the wait was {@link WaitState#LOST}
   */
  Completion finish(WaitState.Outcome outcome, Instant until) throws InterruptedException {
    OptionalInt status = outcome.status();
    String proxyState =
        outcome.state().proxyFirst() ? containers.describeExit(proxy.containerId()) : "";
    if (outcome.state() == WaitState.LOST) {
      throw new SandboxException(
          "waiting for the proxy container of run "
              + runId
              + " failed; the workload's state is unknown");
    }
    outputs.collect(workload.containerId());
    drain();
    if (killed.get() && outcome.state() != WaitState.STOPPED_FROM_OUTSIDE) {
      return new Completion(Completion.End.KILLED, status, "killed on request");
    }
    return switch (outcome.state()) {
      case EXITED ->
          status.isEmpty()
              ? new Completion(
                  Completion.End.ERROR, status, "the workload container vanished before it exited")
              : new Completion(Completion.End.EXIT, status, exitDetail(status.getAsInt()));
      case DEADLINE_PASSED ->
          new Completion(Completion.End.DEADLINE, status, "killed at the deadline " + until);
      case PROXY_DIED ->
          new Completion(
              Completion.End.PROXY_DIED,
              status,
              "the run's egress proxy stopped while the workload ran ("
                  + proxyState
                  + "); the workload was stopped");
      case STOPPED_FROM_OUTSIDE ->
          new Completion(
              Completion.End.ERROR,
              status,
              "the workload and its proxy were stopped together from outside the control plane"
                  + " (workload "
                  + exitDetail(status.orElse(-1))
                  + "): the Docker daemon stopping or restarting (without live-restore it stops"
                  + " every container), or someone stopping the sandbox's containers by hand");
      case WATCHING, PROXY_STOPPED, WORKLOAD_STOPPED, LOST ->
          throw new IllegalStateException("a wait ended in " + outcome.state());
    };
  }

  private static String exitDetail(int status) {
    // 137 = 128 + SIGKILL: the kernel's (or gVisor's) OOM killer, since no one else sent it.
    return status == 137
        ? "exited with status 137 (killed: out of memory?)"
        : "exited with status " + status;
  }

  /**
   * Whether the proxy container is still running, for a workload that is not a container of its own
   * (a warm sandbox's exec); false once it is gone.
   */
  boolean proxyRunning() {
    return containers.running(proxy.containerId());
  }

  /**
   * Stops the workload container (whatever still runs in it) and waits, bounded, until it has; for
   * a workload whose command ran beside the container's own idle process.
   */
  void stopWorkload() throws InterruptedException {
    containers.kill(workload.containerId());
    containers.exitStatusOnceStopped(workload.containerId());
  }

  /** Lets the output streams end, stopping the proxy so that its last decisions are written. */
  private void drain() throws InterruptedException {
    workload.output().awaitCompletion(DRAIN_MILLIS, TimeUnit.MILLISECONDS);
    containers.stop(proxy.containerId(), PROXY_STOP_SECONDS);
    proxy.output().awaitCompletion(DRAIN_MILLIS, TimeUnit.MILLISECONDS);
  }

  /**
   * The workload's {@link RunContract#OUT_DIR} as collected when it stopped ({@link #await}; read
   * now if it was not): a tar whose top folder is {@code out}.
   */
  @Override
  public Optional<InputStream> outputs() {
    outputs.collect(workload.containerId());
    return outputs.open();
  }

  @Override
  public void kill() {
    killed.set(true);
    containers.kill(workload.containerId());
  }

  /**
   * Steps of further work on this built sandbox (a warm sandbox's hand-over): a failing one removes
   * all of it, as a failing launch step does.
   */
  LaunchSteps handOverSteps() {
    return new LaunchSteps(objects);
  }

  @Override
  public void teardown() {
    UnableToTearDownSandboxException.throwIfAny(
        "removing the sandbox of run " + runId, removeAll());
  }

  /** Removes everything; what could not be removed is answered (the reaper's by label). */
  List<String> removeAll() {
    try {
      List<String> problems = new ArrayList<>(objects.remove());
      problems.addAll(outputs.discard());
      return problems;
    } finally {
      afterTeardown.run();
    }
  }
}
