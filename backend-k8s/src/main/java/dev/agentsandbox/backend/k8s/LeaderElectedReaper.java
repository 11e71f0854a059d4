package dev.agentsandbox.backend.k8s;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderCallbacks;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderElectionConfigBuilder;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderElector;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaseLock;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the reaper in one control-plane replica at a time: replicas compete for a Lease in the
 * control plane's namespace, and only the holder reaps. When the holder stops or dies, another
 * replica takes the Lease once it expires. Thread-safe; {@link #close()} releases the Lease.
 */
public final class LeaderElectedReaper implements AutoCloseable {
  /** The Lease's name in the control plane's namespace. */
  public static final String LEASE_NAME = "agent-sandbox-reaper";

  /**
   * Timings of the election and the reaping.
   *
   * @param leaseDuration how long a Lease holds without renewal before another replica may take it
   * @param renewDeadline how long the holder keeps trying to renew before it stops leading
   * @param retryPeriod how often candidates try to acquire and the holder renews
   * @param reapInterval how often the holder runs a reaper pass
   */
  public record Timings(
      Duration leaseDuration, Duration renewDeadline, Duration retryPeriod, Duration reapInterval) {
    /** The timings Kubernetes' own controllers use, with a reaper pass every minute. */
    public static final Timings DEFAULT =
        new Timings(
            Duration.ofSeconds(15),
            Duration.ofSeconds(10),
            Duration.ofSeconds(2),
            Duration.ofMinutes(1));

    public Timings {
      Objects.requireNonNull(leaseDuration, "leaseDuration");
      Objects.requireNonNull(renewDeadline, "renewDeadline");
      Objects.requireNonNull(retryPeriod, "retryPeriod");
      Objects.requireNonNull(reapInterval, "reapInterval");
      if (renewDeadline.compareTo(leaseDuration) >= 0) {
        throw new IllegalArgumentException("renewDeadline must be shorter than leaseDuration");
      }
      if (retryPeriod.compareTo(renewDeadline) >= 0) {
        throw new IllegalArgumentException("retryPeriod must be shorter than renewDeadline");
      }
      if (reapInterval.isNegative() || reapInterval.isZero()) {
        throw new IllegalArgumentException("reapInterval must be positive");
      }
    }
  }

  private static final Logger LOG = LoggerFactory.getLogger(LeaderElectedReaper.class);

  private final KubernetesClient client;
  private final String namespace;
  private final String identity;
  private final Timings timings;
  private final Runnable pass;
  private final ExecutorService electionThread;
  private final ScheduledExecutorService reapThread;
  private final AtomicBoolean leading = new AtomicBoolean();
  private final AtomicBoolean started = new AtomicBoolean();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final AtomicReference<ScheduledFuture<?>> reaping = new AtomicReference<>();
  private final AtomicReference<CompletableFuture<?>> election = new AtomicReference<>();

  /**
   * @param namespace the control plane's namespace, where the Lease lives
   * @param identity this replica's name (its pod name), unique among replicas
   * @param pass one reaper pass, such as {@code () -> backend.reap(clock.instant(), runs::isLive)};
   *     its failures are its own to report, and a failing pass does not stop the next one
   */
  public LeaderElectedReaper(
      KubernetesClient client, String namespace, String identity, Timings timings, Runnable pass) {
    this.client = Objects.requireNonNull(client, "client");
    this.namespace = Objects.requireNonNull(namespace, "namespace");
    this.identity = Objects.requireNonNull(identity, "identity");
    this.timings = Objects.requireNonNull(timings, "timings");
    this.pass = Objects.requireNonNull(pass, "pass");
    this.electionThread = Executors.newSingleThreadExecutor(daemon("agent-sandbox-election"));
    this.reapThread = Executors.newSingleThreadScheduledExecutor(daemon("agent-sandbox-reaper"));
  }

  /** Joins the election; returns at once. */
  public void start() {
    if (!started.compareAndSet(false, true)) {
      throw new IllegalStateException("reaper election already started");
    }
    elect();
  }

  /**
   * Runs one election. fabric8's elector ends once it loses the Lease (a missed renewal, an API
   * outage), so a replica that lost it joins again, after a retry period, until it is closed.
   */
  @SuppressWarnings("FutureReturnValueIgnored") // the rejoin callback's own future carries nothing
  private void elect() {
    if (closed.get()) {
      return;
    }
    LeaderElector elector =
        new LeaderElector(
            client,
            new LeaderElectionConfigBuilder()
                .withName(LEASE_NAME)
                .withLock(new LeaseLock(namespace, LEASE_NAME, identity))
                .withLeaseDuration(timings.leaseDuration())
                .withRenewDeadline(timings.renewDeadline())
                .withRetryPeriod(timings.retryPeriod())
                .withReleaseOnCancel(true)
                .withLeaderCallbacks(
                    new LeaderCallbacks(this::startReaping, this::stopReaping, leader -> {}))
                .build(),
            electionThread);
    CompletableFuture<?> running = elector.start();
    election.set(running);
    running.whenComplete(
        (ignored, failure) -> {
          stopReaping();
          if (!closed.get()) {
            try {
              var unused =
                  reapThread.schedule(
                      this::elect, timings.retryPeriod().toMillis(), TimeUnit.MILLISECONDS);
            } catch (RejectedExecutionException e) {
              // Closed meanwhile: nothing to rejoin.
            }
          }
        });
    if (closed.get()) {
      running.cancel(true);
    }
  }

  /** Whether this replica holds the Lease and is reaping. */
  public boolean isLeading() {
    return leading.get();
  }

  private void startReaping() {
    leading.set(true);
    ScheduledFuture<?> task =
        reapThread.scheduleWithFixedDelay(
            this::runPass, 0, timings.reapInterval().toMillis(), TimeUnit.MILLISECONDS);
    ScheduledFuture<?> previous = reaping.getAndSet(task);
    if (previous != null) {
      previous.cancel(false);
    }
  }

  private void stopReaping() {
    leading.set(false);
    ScheduledFuture<?> task = reaping.getAndSet(null);
    if (task != null) {
      task.cancel(false);
    }
  }

  private void runPass() {
    try {
      pass.run();
    } catch (RuntimeException e) {
      // Swallowed after logging: an exception escaping here would cancel every later pass.
      LOG.warn("reaper pass failed, retrying in {}: {}", timings.reapInterval(), e.toString());
    }
  }

  /** Leaves the election, releasing the Lease if held, and stops reaping. */
  @Override
  public void close() {
    closed.set(true);
    CompletableFuture<?> running = election.get();
    if (running != null) {
      running.cancel(true);
    }
    stopReaping();
    reapThread.shutdownNow();
    electionThread.shutdownNow();
  }

  private static ThreadFactory daemon(String name) {
    return runnable -> {
      Thread thread = new Thread(runnable, name);
      thread.setDaemon(true);
      return thread;
    };
  }
}
