package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import dev.agentsandbox.backend.session.SessionSandbox;
import dev.agentsandbox.steprunner.RunnerClient;
import dev.agentsandbox.steprunner.RunnerSession;
import java.io.InputStream;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * A session's sandbox on Docker: a run's sandbox ({@link DockerSandbox}: the same fence, proxy,
 * runtime, caps, read-only root and user) whose workload container idles in {@code sleep}, with the
 * step runner started in it by one exec ({@link RunnerChannel}). Every step and file operation is a
 * frame on that channel ({@link RunnerSession}), carried out by the runner inside the container,
 * beneath {@code /workspace}, one path segment at a time without following a link
 * (docs/step-runner.md): no path is ever resolved on the host. Closing kills the workload
 * container, and with it the runner and every step; the teardown removes everything as a run's
 * does. The runner's stream ending by itself, or the runner breaking the protocol, kills the
 * container too, and the session ends {@code ERROR} with the reason. Thread-safe as {@link
 * SessionSandbox} requires.
 */
final class DockerSession extends RunnerSession {
  private final DockerSandbox base;
  private final Instant hardDeadline;
  private volatile RunnerChannel channel;
  private volatile String failure;

  private DockerSession(DockerSandbox base, Instant hardDeadline) {
    this.base = base;
    this.hardDeadline = hardDeadline;
  }

  /**
   * Starts the runner in {@code base}'s workload container with {@code env} as {@code user} and
   * waits for its greeting. On failure everything of {@code base} is removed.
   *
   * @throws UnableToLaunchSandboxException when the runner could not be started or did not greet
   */
  static DockerSession open(
      DockerClient docker,
      DockerSandbox base,
      List<String> env,
      String user,
      Instant hardDeadline) {
    DockerSession session = new DockerSession(base, hardDeadline);
    String runId = base.runId();
    try {
      session.channel =
          RunnerChannel.start(
              docker,
              base.workloadContainerId(),
              env,
              user,
              runId,
              session::violated,
              session::streamEnded);
      session.channel.client().awaitReady(SessionRunner.READY_TIMEOUT);
      return session;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw session.failedToOpen("interrupted", e);
    } catch (RuntimeException e) {
      throw session.failedToOpen(DockerErrors.describe(e), e);
    }
  }

  private UnableToLaunchSandboxException failedToOpen(String why, Exception cause) {
    markOver();
    if (channel != null) {
      channel.close();
    }
    UnableToLaunchSandboxException failure =
        new UnableToLaunchSandboxException(
            "starting the step runner in workload container "
                + base.workloadName()
                + " for run "
                + base.runId()
                + ": "
                + why
                + " (the image must have sleep, and the daemon must allow exec)",
            cause);
    List<String> left = base.removeAll();
    if (!left.isEmpty()) {
      failure.addSuppressed(
          new IllegalStateException("left for the reaper: " + String.join("; ", left)));
    }
    return failure;
  }

  /** The runner broke the protocol: it is not trusted any more, and the sandbox is stopped. */
  private void violated(String why) {
    fail("the step runner broke the protocol: " + why);
  }

  private void streamEnded(String how) {
    if (!isOver()) {
      fail("the step runner's channel ended while the session was open: " + how);
    }
  }

  private void fail(String why) {
    if (failure == null) {
      failure = why;
    }
    markOver();
    base.kill();
  }

  @Override
  protected RunnerClient runner() {
    return channel.client();
  }

  @Override
  protected String whyOver() {
    String failed = failure;
    return failed == null ? "" : "; " + failed;
  }

  /** The workload container's id, for tests that look inside the sandbox. */
  String workloadContainerId() {
    return base.workloadContainerId();
  }

  @Override
  public String runId() {
    return base.runId();
  }

  @Override
  public String runtime() {
    return base.runtime();
  }

  @Override
  public Optional<String> imageId() {
    return base.imageId();
  }

  @Override
  public Optional<String> pooledProxy() {
    return base.pooledProxy();
  }

  /**
   * As a run's, bounded by the session's own hard deadline, except that the workload ending by
   * itself is a failure (a session's idle process only stops when it is killed), and so is the
   * runner's channel ending or breaking the protocol: {@code ERROR}, with the reason.
   */
  @Override
  public Completion await(Instant deadline) throws InterruptedException {
    Completion completion = base.await(deadline.isBefore(hardDeadline) ? deadline : hardDeadline);
    markOver();
    // The container is stopped: whatever the runner was doing is over, and waiting callers learn
    // it now rather than at their own time-outs.
    channel.close();
    String failed = failure;
    if (failed != null) {
      return new Completion(Completion.End.ERROR, completion.exitStatus(), failed);
    }
    if (completion.end() == Completion.End.EXIT) {
      return new Completion(
          Completion.End.ERROR,
          completion.exitStatus(),
          "the session's workload container ended by itself ("
              + completion.detail()
              + "); the session cannot take steps any more");
    }
    return completion;
  }

  @Override
  public Optional<InputStream> outputs() {
    return base.outputs();
  }

  /** Kills the workload container: the runner, every step and whatever they left running. */
  @Override
  public void kill() {
    markOver();
    base.kill();
  }

  @Override
  public void teardown() {
    markOver();
    RunnerChannel open = channel;
    if (open != null) {
      open.close();
    }
    base.teardown();
  }
}
