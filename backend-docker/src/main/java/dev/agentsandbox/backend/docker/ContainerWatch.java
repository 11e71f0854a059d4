package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.model.WaitResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.OptionalInt;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * The wait for a workload that is its container's own process (a cold run's, a session's idle one),
 * driven through {@link WaitState}'s table: the daemon's wait on the workload and on the proxy run
 * at once, and the first to end, or the deadline, decides the next state.
 */
final class ContainerWatch {
  /** How long the workload's wait may take to say why, once the proxy's wait ended first. */
  static final Duration WORKLOAD_GRACE = Duration.ofSeconds(10);

  /** How long (in 100 ms polls) a workload stopped by a signal waits to see its proxy stop too. */
  private static final int OUTSIDE_STOP_POLLS = 30;

  private final DockerClient client;
  private final Containers containers;
  private final String workloadId;
  private final String proxyId;
  private final BooleanSupplier killedByUs;
  private final String owner;

  /**
   * @param killedByUs whether this control plane sent the workload a kill (then a SIGKILL ending is
   *     ours, never "from outside")
   */
  ContainerWatch(
      DockerClient client,
      String runId,
      String workloadId,
      String proxyId,
      BooleanSupplier killedByUs) {
    this.client = client;
    this.containers = new Containers(client, runId);
    this.workloadId = workloadId;
    this.proxyId = proxyId;
    this.killedByUs = killedByUs;
    this.owner = "run " + runId;
  }

  /**
   * Waits until the workload or its proxy stops, or {@code until} passes; the workload is stopped
   * when the end says so ({@link WaitState#stopsTheWorkload()}), and its status is read.
   *
   * @throws RuntimeException what broke the workload's wait (the daemon gone, say)
   */
  WaitState.Outcome await(Instant until) throws InterruptedException {
    WaitState.Tracker wait = new WaitState.Tracker();
    CountDownLatch stopped = new CountDownLatch(1);
    Stopped workload = client.waitContainerCmd(workloadId).exec(new Stopped(stopped));
    Stopped proxy = client.waitContainerCmd(proxyId).exec(new Stopped(stopped));
    try {
      long millis = Duration.between(Instant.now(), until).toMillis();
      if (millis <= 0 || !stopped.await(millis, TimeUnit.MILLISECONDS)) {
        wait.moveTo(WaitState.DEADLINE_PASSED);
      } else if (workload.hasEnded()) {
        workload.throwIfBroken();
        wait.moveTo(WaitState.WORKLOAD_STOPPED);
      } else {
        wait.moveTo(WaitState.PROXY_STOPPED);
        if (proxy.endedCleanly() && containers.running(workloadId)) {
          wait.moveTo(WaitState.PROXY_DIED);
        } else if (workload.awaitEnd(WORKLOAD_GRACE)) {
          // A daemon stopping stops both; the workload's own wait says what happened.
          workload.throwIfBroken();
          wait.moveTo(WaitState.WORKLOAD_STOPPED);
        } else {
          wait.moveTo(WaitState.LOST);
        }
      }
    } finally {
      SandboxObjects.close(workload, owner, "the wait on the workload");
      SandboxObjects.close(proxy, owner, "the wait on the proxy");
    }
    if (wait.state() == WaitState.LOST) {
      return new WaitState.Outcome(WaitState.LOST, OptionalInt.empty());
    }
    if (wait.state().stopsTheWorkload()) {
      containers.kill(workloadId);
    }
    OptionalInt status = containers.exitStatusOnceStopped(workloadId);
    if (wait.state() == WaitState.WORKLOAD_STOPPED) {
      wait.moveTo(stoppedFromOutside(status) ? WaitState.STOPPED_FROM_OUTSIDE : WaitState.EXITED);
    }
    return new WaitState.Outcome(wait.state(), status);
  }

  /**
   * Whether a workload that ended by SIGTERM or SIGKILL, which this control plane did not send, was
   * stopped together with its proxy: what a stopping daemon does (it answers its API while it stops
   * the containers, then goes). A workload that signals itself, or the OOM killer, leaves the proxy
   * running. Waits (bounded) for the proxy, since the daemon stops both at about the same moment.
   */
  private boolean stoppedFromOutside(OptionalInt status) throws InterruptedException {
    if (killedByUs.getAsBoolean()
        || status.isEmpty()
        || (status.getAsInt() != 143 && status.getAsInt() != 137)) {
      return false;
    }
    for (int i = 0; i < OUTSIDE_STOP_POLLS; i++) {
      if (containers.daemonSilence().isPresent() || !containers.running(proxyId)) {
        return true;
      }
      Thread.sleep(100);
    }
    return false;
  }

  /**
   * One container's wait, counting down the latch both share when it ends, cleanly or broken. Keeps
   * its own record of how it ended: docker-java's {@code awaitCompletion} throws a broken wait's
   * error, and closes the stream when it returns.
   */
  private static final class Stopped extends ResultCallback.Adapter<WaitResponse> {
    private final CountDownLatch any;
    private final CountDownLatch mine = new CountDownLatch(1);
    private volatile Throwable broken;

    Stopped(CountDownLatch any) {
      this.any = any;
    }

    @Override
    public void onError(Throwable throwable) {
      broken = throwable;
      mine.countDown();
      any.countDown();
      super.onError(throwable);
    }

    @Override
    public void onComplete() {
      mine.countDown();
      any.countDown();
      super.onComplete();
    }

    boolean hasEnded() {
      return mine.getCount() == 0;
    }

    boolean endedCleanly() {
      return hasEnded() && broken == null;
    }

    boolean awaitEnd(Duration grace) throws InterruptedException {
      return mine.await(grace.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Throws what broke the wait, as docker-java gave it, when it broke. */
    void throwIfBroken() {
      Throwable cause = broken;
      if (cause instanceof RuntimeException runtime) {
        throw runtime;
      }
      if (cause instanceof Error error) {
        throw error;
      }
      if (cause != null) {
        throw new IllegalStateException(DockerErrors.describe(cause), cause);
      }
    }
  }
}
