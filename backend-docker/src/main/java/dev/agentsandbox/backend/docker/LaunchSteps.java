package dev.agentsandbox.backend.docker;

import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import java.util.List;

/**
 * The steps of one launch (a run's sandbox, a warm sandbox's hand-over, a proxy-pool standby), each
 * named for its message: a step that fails removes everything the launch created so far and throws
 * {@link UnableToLaunchSandboxException} as {@code <step> for <owner>: <what the daemon said>
 * (<hint>)}. What the removal could not remove is attached to that exception as suppressed (the
 * reaper removes it by label). Not thread-safe: one launch, one thread.
 */
final class LaunchSteps {
  /** A step's work. */
  interface Step<T> {
    T run() throws InterruptedException;
  }

  /** A step's work that answers nothing. */
  interface Action {
    void run() throws InterruptedException;
  }

  private final SandboxObjects objects;

  /** Steps whose failure removes what {@code objects} holds. */
  LaunchSteps(SandboxObjects objects) {
    this.objects = objects;
  }

  /** Runs one step; see the class comment for what a failure does. */
  <T> T step(String name, Step<T> work) {
    try {
      return work.run();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw undone(
          new UnableToLaunchSandboxException(
              name + " for " + objects.owner() + ": interrupted", e));
    } catch (RuntimeException e) {
      throw undone(
          new UnableToLaunchSandboxException(
              name + " for " + objects.owner() + ": " + DockerErrors.describe(e) + hint(e), e));
    }
  }

  /** {@link #step(String, Step)} for work that answers nothing. */
  void run(String name, Action work) {
    step(
        name,
        () -> {
          work.run();
          return null;
        });
  }

  /**
   * Ends the launch with {@code failure} (decided, not thrown by a step): removes what was created
   * and returns the exception to throw.
   */
  UnableToLaunchSandboxException fail(String name, String why) {
    return undone(
        new UnableToLaunchSandboxException(name + " for " + objects.owner() + ": " + why));
  }

  private UnableToLaunchSandboxException undone(UnableToLaunchSandboxException failure) {
    List<String> left = objects.remove();
    if (!left.isEmpty()) {
      failure.addSuppressed(
          new IllegalStateException(
              "left for the reaper after the failed launch: " + String.join("; ", left)));
    }
    return failure;
  }

  /** What an operator can do about the daemon's words, when the words say. */
  static String hint(RuntimeException e) {
    String text = DockerErrors.describe(e);
    if (text.contains("No such image")) {
      return " (images are not pulled: build them with images/build.sh or load them first)";
    }
    if (text.contains("unknown or invalid runtime")) {
      return " (register it with scripts/install-host.sh)";
    }
    return "";
  }
}
