package dev.agentsandbox.backend;

/**
 * A sandbox prepared ahead of its run (a warm sandbox): fence, proxy with the run's policy and an
 * idle workload exist; the run's command, environment and credentials come at {@link #handOver}. It
 * serves exactly one run: after a hand-over (successful or not) or a {@link #discard()} it can
 * never be handed over again.
 *
 * <p>Thread-safety: every method may be called from any thread; {@link #handOver} succeeds at most
 * once even when called concurrently, and {@link #discard()} is idempotent.
 */
public interface PreparedSandbox {
  /** The run id the sandbox was prepared under; the run it serves takes this id. */
  String runId();

  /**
   * Hands the sandbox to its run: delivers the run's credentials, starts its command with its
   * environment, and from then on behaves as a launched {@link Sandbox} whose {@link
   * Sandbox#teardown()} removes everything that was prepared.
   *
   * @param run the run's spec: same run id, agent, image, egress policy, resources, runtime
   *     requirement and expiry as the spec it was prepared from, plus its command, environment and
   *     credentials
   * @throws IllegalStateException when the sandbox was already handed over or discarded
   * @throws IllegalArgumentException when {@code run} differs from the prepared spec in anything
   *     that was prepared
   * @throws UnableToLaunchSandboxException when the command could not be started; everything
   *     prepared has been removed
   */
  Sandbox handOver(RunSpec run, SandboxListener listener);

  /**
   * Hands the sandbox to a session: delivers the run's credentials and environment and, instead of
   * starting a command, answers as a {@link dev.agentsandbox.backend.session.SessionSandbox} whose
   * steps run with them. The same rules as {@link #handOver} apply (once, same prepared spec).
   *
   * @throws UnsupportedOperationException when this backend's sandboxes do not take steps
   */
  default dev.agentsandbox.backend.session.SessionSandbox handOverSession(
      RunSpec run, SandboxListener listener) {
    throw new UnsupportedOperationException("this prepared sandbox does not take steps");
  }

  /** Removes everything prepared; idempotent, and a no-op after a hand-over. */
  void discard();
}
