package dev.agentsandbox.backend.k8s;

import io.fabric8.kubernetes.api.model.node.v1.RuntimeClass;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Asks the API server about the gVisor RuntimeClass and judges its handler. A launch asks afresh
 * every time ({@link #now()}); {@code probe} and {@code plan} take {@link #recent()}: the last
 * answer while it is younger than the configured cache lifetime, else one lookup waited on for the
 * configured time-out at most. An API server that does not answer costs a plan that time-out once,
 * not the client's whole retry schedule; the lookup goes on in the background and its answer, when
 * it comes, is cached. Thread-safe.
 */
final class RuntimeClassLookup {
  /** What the cluster said. */
  sealed interface Finding permits Trusted, Absent, Unverified {}

  /** The RuntimeClass exists and its handler is one the configuration trusts as gVisor. */
  record Trusted(String handler) implements Finding {}

  /**
   * The RuntimeClass is missing, or its handler is not a trusted one (then it counts as absent).
   */
  record Absent(String why) implements Finding {}

  /** The API did not answer (in time, or at all). */
  record Unverified(String why) implements Finding {}

  /** A finding and when it was made. */
  record Seen(Finding finding, Instant at) {}

  private final KubernetesClient client;
  private final KubernetesBackendConfig config;
  private final Clock clock;
  private final AtomicInteger lookups = new AtomicInteger();
  private Seen cached;
  private CompletableFuture<Seen> inFlight;

  RuntimeClassLookup(KubernetesClient client, KubernetesBackendConfig config, Clock clock) {
    this.client = client;
    this.config = config;
    this.clock = clock;
  }

  /** Asks now, with the client's own time-outs; an API failure is thrown, for the launch to say. */
  Finding now() {
    Finding finding = judge(fetch());
    store(new Seen(finding, clock.instant()));
    return finding;
  }

  /** The last answer if it is recent enough, else a bounded wait for a new one. */
  Seen recent() {
    CompletableFuture<Seen> pending;
    synchronized (this) {
      if (cached != null && age(cached).compareTo(config.probeCacheTtl()) < 0) {
        return cached;
      }
      if (inFlight == null || inFlight.isDone()) {
        CompletableFuture<Seen> lookup = new CompletableFuture<>();
        lookups.incrementAndGet();
        Thread.ofVirtual()
            .name("agent-sandbox-k8s-runtime-lookup")
            .start(
                () -> {
                  Seen seen = new Seen(lookupQuietly(), clock.instant());
                  store(seen);
                  lookup.complete(seen);
                });
        inFlight = lookup;
      }
      pending = inFlight;
    }
    try {
      return pending.get(config.probeTimeout().toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      Seen silent =
          new Seen(
              new Unverified(
                  "no answer from the Kubernetes API at "
                      + client.getMasterUrl()
                      + " within "
                      + seconds(config.probeTimeout())
                      + " (the lookup goes on in the background; check the API server's address"
                      + " in the kubeconfig and the control plane's egress NetworkPolicy)"),
              clock.instant());
      store(silent);
      return silent;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new Seen(
          new Unverified("interrupted while asking the Kubernetes API"), clock.instant());
    } catch (ExecutionException e) {
      return new Seen(new Unverified(Messages.of(e.getCause())), clock.instant());
    }
  }

  /** How long ago a finding was made, never negative. */
  Duration age(Seen seen) {
    Duration age = Duration.between(seen.at(), clock.instant());
    return age.isNegative() ? Duration.ZERO : age;
  }

  /** How many background lookups {@link #recent()} started (for tests). */
  int lookupsStarted() {
    return lookups.get();
  }

  private synchronized void store(Seen seen) {
    // A late answer never replaces a newer one.
    if (cached == null || !seen.at().isBefore(cached.at())) {
      cached = seen;
    }
  }

  private Finding lookupQuietly() {
    try {
      return judge(fetch());
    } catch (KubernetesClientException e) {
      return new Unverified(apiFailure(e));
    } catch (RuntimeException e) {
      return new Unverified(
          "reading RuntimeClass "
              + config.runtimeClassName()
              + " from the Kubernetes API at "
              + client.getMasterUrl()
              + " failed: "
              + Messages.of(e));
    }
  }

  private RuntimeClass fetch() {
    return client.runtimeClasses().withName(config.runtimeClassName()).get();
  }

  private Finding judge(RuntimeClass found) {
    if (found == null) {
      return new Absent(
          "RuntimeClass " + config.runtimeClassName() + " not found at " + client.getMasterUrl());
    }
    String handler = found.getHandler();
    if (handler == null || !config.trustedRuntimeHandlers().contains(handler)) {
      // A RuntimeClass named gvisor whose handler is runc would run hostile code under runc.
      return new Absent(
          "RuntimeClass "
              + config.runtimeClassName()
              + " at "
              + client.getMasterUrl()
              + " has handler "
              + handler
              + ", not one of the trusted gVisor handlers "
              + config.trustedRuntimeHandlers()
              + ", so it counts as absent (fix the RuntimeClass, or add the handler to"
              + " trusted_runtime_handlers if it is runsc under another name)");
    }
    return new Trusted(handler);
  }

  String apiFailure(KubernetesClientException e) {
    return "reading RuntimeClass "
        + config.runtimeClassName()
        + " from the Kubernetes API at "
        + client.getMasterUrl()
        + " failed: "
        + Messages.of(e)
        + " (check the kubeconfig or in-cluster ServiceAccount and the ClusterRole in"
        + " deploy/k3s/sandbox/agent-sandbox.yaml)";
  }

  static String seconds(Duration d) {
    long millis = d.toMillis();
    return millis % 1000 == 0 ? (millis / 1000) + " s" : (millis / 1000.0) + " s";
  }
}
