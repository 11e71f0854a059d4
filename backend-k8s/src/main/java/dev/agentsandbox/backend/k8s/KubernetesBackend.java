package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.ReapReport;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxBackend;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.SandboxPlan;
import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import dev.agentsandbox.backend.session.SessionSandbox;
import dev.agentsandbox.relay.RelayIdentity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.time.Clock;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Predicate;

/**
 * Runs each sandbox in its own namespace {@code agent-run-<id>}: default-deny NetworkPolicies, a
 * ServiceAccount that can do nothing, a quota, the egress proxy as its own pod, and the agent as a
 * Job under gVisor when the cluster has the RuntimeClass. Thread-safe: it holds no per-run state.
 */
public final class KubernetesBackend implements SandboxBackend {
  /** The backend's configured name. */
  public static final String NAME = "k8s";

  /** The runtime reported when pods run under the node's default runtime (usually runc). */
  static final String NODE_DEFAULT_RUNTIME = "node-default";

  private final KubernetesClient client;
  private final KubernetesBackendConfig config;
  private final Clock clock;
  private final BundleFactory factory;
  private final NamespaceReaper reaper;
  private final RuntimeClassLookup lookup;

  public KubernetesBackend(KubernetesClient client, KubernetesBackendConfig config, Clock clock) {
    this.client = Objects.requireNonNull(client, "client");
    this.config = Objects.requireNonNull(config, "config");
    this.clock = Objects.requireNonNull(clock, "clock");
    this.factory = new BundleFactory(config);
    this.reaper = new NamespaceReaper(client);
    this.lookup = new RuntimeClassLookup(client, config, clock);
  }

  @Override
  public String name() {
    return NAME;
  }

  /**
   * Closes the Kubernetes client it was given (its HTTP client, connection pool and watches): the
   * backend owns it from its construction, and is closed after the reaper that shares it.
   */
  @Override
  public void close() {
    client.close();
  }

  /**
   * Credentials arrive through an immutable Secret in the run's namespace that only the agent's pod
   * references: an init container copies them onto a memory-backed volume as 0400 files of the
   * workload's uid, and the kubelet fills the variables their configuration names from the Secret.
   * The Secret is deleted with the namespace; see docs/backends/k8s.md.
   */
  @Override
  public boolean deliversCredentials() {
    return true;
  }

  /** A service destination is one NetworkPolicy peer: its namespace and pod labels together. */
  @Override
  public boolean reachesClusterServices() {
    return true;
  }

  /**
   * What the cluster offers, from an answer at most {@code probeCacheTtl} old, or one lookup waited
   * on for {@code probeTimeout} at most: a serve start or a plan never waits on an unreachable API
   * server's retry schedule.
   */
  @Override
  public Probe probe() {
    RuntimeClassLookup.Seen seen = lookup.recent();
    String when = staleness(seen);
    return switch (seen.finding()) {
      case RuntimeClassLookup.Trusted trusted ->
          new Probe(
              NAME,
              true,
              Isolation.GVISOR,
              trusted.handler(),
              "RuntimeClass "
                  + config.runtimeClassName()
                  + " (handler "
                  + trusted.handler()
                  + ", trusted as gVisor) found at "
                  + client.getMasterUrl()
                  + "; each sandbox proves gVisor from inside its pod before the agent starts"
                  + when);
      case RuntimeClassLookup.Absent absent ->
          config.requireRuntimeClass()
              ? Probe.unavailable(NAME, missingRuntimeClass(absent.why(), "sandboxes") + when)
              : new Probe(
                  NAME,
                  true,
                  Isolation.CONTAINER,
                  NODE_DEFAULT_RUNTIME,
                  absent.why()
                      + ": sandboxes use the node's default runtime behind the same policies"
                      + " (set require_runtime_class to refuse instead)"
                      + when);
      case RuntimeClassLookup.Unverified unverified ->
          Probe.unavailable(NAME, unverified.why() + when);
    };
  }

  /**
   * The bundle a launch would create. Reads whether a trusted RuntimeClass exists, as {@link
   * #probe()} does (bounded and cached); when the API cannot be read the plan shows the bundle for
   * a cluster that has it, since that is what a launch would need, and says it is unverified. The
   * agent's proxy address is assigned at launch and shown as a marker.
   */
  @Override
  public SandboxPlan plan(RunSpec spec) {
    RuntimeClassLookup.Seen seen = lookup.recent();
    Optional<String> runtimeClass = planned(seen);
    String runtime =
        switch (seen.finding()) {
          case RuntimeClassLookup.Trusted trusted -> trusted.handler();
          case RuntimeClassLookup.Absent absent -> NODE_DEFAULT_RUNTIME;
          case RuntimeClassLookup.Unverified unverified ->
              config.trustedRuntimeHandlers().get(0)
                  + " (not verified: "
                  + unverified.why()
                  + staleness(seen)
                  + ")";
        };
    KubernetesBundle bundle = factory.build(spec, runtimeClass, Optional.empty());
    return new SandboxPlan(
        NAME,
        runtime,
        runtimeClass.isPresent() ? Isolation.GVISOR : Isolation.CONTAINER,
        bundle.manifests());
  }

  /** The bundle a launch would create, as fabric8 objects (for {@link KubernetesBundle#toYaml}). */
  public KubernetesBundle bundle(RunSpec spec) {
    return factory.build(spec, planned(lookup.recent()), Optional.empty());
  }

  private Optional<String> planned(RuntimeClassLookup.Seen seen) {
    return seen.finding() instanceof RuntimeClassLookup.Absent
        ? Optional.empty()
        : Optional.of(config.runtimeClassName());
  }

  /** Says how old a cached answer is, so that nobody takes it for a fresh one. */
  private String staleness(RuntimeClassLookup.Seen seen) {
    long age = lookup.age(seen).toSeconds();
    return age < 1
        ? ""
        : " (as of "
            + age
            + " s ago; answers are kept "
            + RuntimeClassLookup.seconds(config.probeCacheTtl())
            + ")";
  }

  @Override
  public Sandbox launch(RunSpec spec, SandboxListener listener) {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(listener, "listener");
    Runtime runtime = runtimeFor(spec);
    return new SandboxLauncher(client, config, clock, factory)
        .launch(spec, runtime.className(), runtime.name(), listener);
  }

  /**
   * Sessions: the agent's pod runs the step runner with the session relay beside it, reached by the
   * control plane over mutual TLS with per-session keys; no {@code pods/exec}, no new rights.
   */
  @Override
  public boolean opensSessions() {
    return true;
  }

  /**
   * A run's bundle plus a session's objects: the relay's ingress policy, the runner's copy and the
   * relay sidecar in the agent's pod, with the control plane's certificate pin shown as made at
   * launch.
   */
  @Override
  public SandboxPlan planSession(RunSpec spec) {
    SandboxPlan plan = plan(spec);
    KubernetesBundle bundle =
        factory.build(
            spec, planned(lookup.recent()), Optional.empty(), Optional.of(SessionWiring.planned()));
    return new SandboxPlan(plan.backend(), plan.runtime(), plan.isolation(), bundle.manifests());
  }

  /** A session's bundle as {@link #planSession} shows it, as fabric8 objects. */
  public KubernetesBundle sessionBundle(RunSpec spec) {
    return factory.build(
        spec, planned(lookup.recent()), Optional.empty(), Optional.of(SessionWiring.planned()));
  }

  /**
   * Creates the session's namespace as a run's (fence first, then proxy, then the Job) with the
   * session's additions, then connects to its relay: the control plane's key pair for this session
   * is made here, in memory, and only its certificate's pin goes into the pod's spec. On failure
   * the namespace is deleted before this throws.
   */
  @Override
  public SessionSandbox openSession(RunSpec spec, SandboxListener listener) {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(listener, "listener");
    Runtime runtime = runtimeFor(spec);
    Instant now = clock.instant();
    RelayIdentity own =
        RelayIdentity.generate(
            RelayIdentity.Role.CONTROL_PLANE,
            spec.runId(),
            now,
            spec.expiresAt().isAfter(now) ? spec.expiresAt() : now.plus(spec.ttl()));
    KubernetesSandbox sandbox =
        new SandboxLauncher(client, config, clock, factory)
            .launch(
                spec,
                runtime.className(),
                runtime.name(),
                listener,
                Optional.of(SessionWiring.of(own.pin())));
    try {
      return new SessionOpener(config, clock).open(sandbox, own);
    } catch (RuntimeException e) {
      SandboxLauncher.tearDownAfter(sandbox, e);
      throw e;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      UnableToLaunchSandboxException failure =
          new UnableToLaunchSandboxException(
              "opening the session of run "
                  + spec.runId()
                  + ": interrupted while waiting for its relay (its namespace was deleted)",
              e);
      SandboxLauncher.tearDownAfter(sandbox, failure);
      throw failure;
    }
  }

  /** The RuntimeClass a launch uses and the runtime it reports. */
  private record Runtime(Optional<String> className, String name) {}

  private Runtime runtimeFor(RunSpec spec) {
    RuntimeClassLookup.Finding finding;
    try {
      finding = lookup.now();
    } catch (KubernetesClientException e) {
      throw new UnableToLaunchSandboxException(
          "launch of run " + spec.runId() + " on Kubernetes: " + lookup.apiFailure(e), e);
    }
    if (finding instanceof RuntimeClassLookup.Trusted trusted) {
      return new Runtime(Optional.of(config.runtimeClassName()), trusted.handler());
    }
    String why = ((RuntimeClassLookup.Absent) finding).why();
    if (config.requireRuntimeClass() || spec.requireRuntimeClass()) {
      throw new UnableToLaunchSandboxException(
          "launch of run "
              + spec.runId()
              + " on Kubernetes refused: "
              + missingRuntimeClass(why, "it"));
    }
    return new Runtime(Optional.empty(), NODE_DEFAULT_RUNTIME);
  }

  /** How many RuntimeClass lookups probe and plan started (for tests). */
  int runtimeLookupsStarted() {
    return lookup.lookupsStarted();
  }

  @Override
  public ReapReport reap(Instant now, Predicate<String> isLive) {
    return reaper.reap(now, isLive);
  }

  private static String missingRuntimeClass(String why, String subject) {
    return why
        + " and gVisor is required, so "
        + subject
        + " will not fall back to the node's default runtime (install runsc on the nodes, add it"
        + " to containerd's config and apply deploy/k3s/sandbox/runtimeclass-gvisor.yaml; see"
        + " docs/backends/k8s.md)";
  }
}
