package dev.agentsandbox.backend;

import java.time.Instant;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Creates sandboxes of one kind (Docker containers, Kubernetes namespaces, Firecracker microVMs).
 *
 * <p>Every resource a backend creates carries {@link RunSpec#labels()}, and a backend never removes
 * anything that does not carry {@link Labels#MANAGED_BY}. Implementations are thread-safe: the run
 * service launches several runs at once and the reaper runs beside them.
 *
 * <p>The composition root that made a backend closes it once, after the last run it launched has
 * been torn down or left for the reaper: whatever the backend holds beside its runs (the Docker
 * backend's proxy pool) is released then.
 */
public interface SandboxBackend extends AutoCloseable {
  /** The backend's name as configured: {@code docker}, {@code k8s} or {@code firecracker}. */
  String name();

  /**
   * Whether this backend delivers {@link RunSpec#credentials()} into its sandboxes as {@link
   * RunCredential} says. The run service refuses a run with credentials on a backend that does not,
   * rather than mint credentials the workload never receives.
   */
  default boolean deliversCredentials() {
    return false;
  }

  /**
   * Whether this backend fences a run's proxy to the pods of an in-cluster service, so that an
   * internal destination named as a service (namespace and pod labels) means what it says. The run
   * service refuses a run whose agent has one on a backend that does not.
   */
  default boolean reachesClusterServices() {
    return false;
  }

  /** Checks whether this host can run sandboxes of this kind now, and how strongly isolated. */
  Probe probe();

  /**
   * Every object a run would create, in creation order, exactly as {@link #launch} will create
   * them. Creates nothing and needs no access to the backend's daemon beyond reading what runtime
   * is available.
   */
  SandboxPlan plan(RunSpec spec);

  /**
   * Creates the run's sandbox (network fence, proxy, then the workload, in that order) and starts
   * the workload. On failure it removes whatever it created before throwing.
   *
   * @throws UnableToLaunchSandboxException when the sandbox could not be created; the message names
   *     the step that failed and the daemon's answer
   */
  Sandbox launch(RunSpec spec, SandboxListener listener);

  /** Whether {@link #openSession} is implemented: this backend's sandboxes take steps. */
  default boolean opensSessions() {
    return false;
  }

  /**
   * Creates a session's sandbox exactly as {@link #launch} creates a run's (the same fence, proxy,
   * policy, limits, labels and credentials), but with its workload idle, waiting for steps and
   * files ({@link dev.agentsandbox.backend.session.SessionSandbox}); {@code spec}'s command is not
   * run. On failure it removes whatever it created before throwing.
   *
   * @throws UnableToLaunchSandboxException when the sandbox could not be created
   * @throws UnsupportedOperationException when {@link #opensSessions()} is false
   */
  default dev.agentsandbox.backend.session.SessionSandbox openSession(
      RunSpec spec, SandboxListener listener) {
    throw new UnsupportedOperationException("the " + name() + " backend does not open sessions");
  }

  /**
   * Every object a session would create, in creation order, exactly as {@link #openSession} will
   * create them; creates nothing, as {@link #plan}. By default a run's plan, for a backend whose
   * sessions create what its runs do.
   */
  default SandboxPlan planSession(RunSpec spec) {
    return plan(spec);
  }

  /** Whether {@link #prepare} is implemented: this backend keeps warm sandboxes. */
  default boolean prepares() {
    return false;
  }

  /**
   * Prepares a sandbox for a run that does not exist yet: the fence, the proxy enforcing {@code
   * spec}'s egress policy, and the workload started and idle, so that {@link
   * PreparedSandbox#handOver} only starts the command. {@code spec}'s command, environment,
   * credentials and run labels are not used (they come at hand-over); its run id, expiry and labels
   * go on everything created, so the reaper finds a prepared sandbox like any other.
   *
   * @param idleUntil when the sandbox is discarded if no run took it; the backend bounds the idle
   *     workload's life by it plus the run's ttl
   * @throws UnableToLaunchSandboxException when it could not be prepared; nothing is left
   * @throws UnsupportedOperationException when {@link #prepares()} is false
   */
  default PreparedSandbox prepare(RunSpec spec, Instant idleUntil) {
    throw new UnsupportedOperationException("the " + name() + " backend keeps no warm sandboxes");
  }

  /**
   * Removes the resources of runs that are over: whose expiry label has passed at {@code now}, or
   * whose run id {@code isLive} rejects (the run ended or the control plane that owned it died).
   */
  ReapReport reap(Instant now, Predicate<String> isLive);

  /**
   * The standby proxies this backend keeps started ahead of runs, counted when asked: {@code ready}
   * (started and awaiting a run now) and, since the backend was made, {@code created}, {@code
   * taken} (by a run), {@code failed} (a creation failed) and {@code expired} (destroyed unused).
   * Empty for a backend that keeps no such pool; read each time metrics are scraped, so it must be
   * cheap and never block on a daemon.
   */
  default Map<String, Long> proxyPoolCounts() {
    return Map.of();
  }

  /**
   * Releases what this backend holds beside its runs (the Docker backend removes the proxy-pool
   * standbys no run took); runs and their sandboxes are left alone. Called once, by whoever made
   * the backend; nothing to release by default.
   */
  @Override
  default void close() {}
}
