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
import io.fabric8.kubernetes.api.model.node.v1.RuntimeClass;
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

  public KubernetesBackend(KubernetesClient client, KubernetesBackendConfig config, Clock clock) {
    this.client = Objects.requireNonNull(client, "client");
    this.config = Objects.requireNonNull(config, "config");
    this.clock = Objects.requireNonNull(clock, "clock");
    this.factory = new BundleFactory(config);
    this.reaper = new NamespaceReaper(client);
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public Probe probe() {
    Optional<RuntimeClass> runtimeClass;
    try {
      runtimeClass = findRuntimeClass();
    } catch (KubernetesClientException e) {
      return Probe.unavailable(NAME, apiFailure(e));
    }
    if (runtimeClass.isPresent()) {
      RuntimeClass found = runtimeClass.get();
      return new Probe(
          NAME,
          true,
          Isolation.GVISOR,
          found.getHandler(),
          "RuntimeClass "
              + config.runtimeClassName()
              + " (handler "
              + found.getHandler()
              + ")"
              + " found at "
              + client.getMasterUrl());
    }
    if (config.requireRuntimeClass()) {
      return Probe.unavailable(NAME, missingRuntimeClass("sandboxes"));
    }
    return new Probe(
        NAME,
        true,
        Isolation.CONTAINER,
        NODE_DEFAULT_RUNTIME,
        "RuntimeClass "
            + config.runtimeClassName()
            + " not found at "
            + client.getMasterUrl()
            + ": sandboxes use the node's default runtime behind the same policies"
            + " (set require_runtime_class to refuse instead)");
  }

  /**
   * The bundle a launch would create. Reads only whether the RuntimeClass exists; when the API
   * cannot be read the plan shows the bundle for a cluster that has it, since that is what a launch
   * would need. The agent's proxy address is assigned at launch and shown as a marker.
   */
  @Override
  public SandboxPlan plan(RunSpec spec) {
    Optional<String> runtimeClass;
    String runtime;
    try {
      Optional<RuntimeClass> found = findRuntimeClass();
      runtimeClass = found.map(rc -> config.runtimeClassName());
      runtime = found.map(RuntimeClass::getHandler).orElse(NODE_DEFAULT_RUNTIME);
    } catch (KubernetesClientException e) {
      runtimeClass = Optional.of(config.runtimeClassName());
      runtime = "runsc (not verified: " + apiFailure(e) + ")";
    }
    KubernetesBundle bundle = factory.build(spec, runtimeClass, Optional.empty());
    return new SandboxPlan(
        NAME,
        runtime,
        runtimeClass.isPresent() ? Isolation.GVISOR : Isolation.CONTAINER,
        bundle.manifests());
  }

  /** The bundle a launch would create, as fabric8 objects (for {@link KubernetesBundle#toYaml}). */
  public KubernetesBundle bundle(RunSpec spec) {
    Optional<String> runtimeClass;
    try {
      runtimeClass = findRuntimeClass().map(rc -> config.runtimeClassName());
    } catch (KubernetesClientException e) {
      runtimeClass = Optional.of(config.runtimeClassName());
    }
    return factory.build(spec, runtimeClass, Optional.empty());
  }

  @Override
  public Sandbox launch(RunSpec spec, SandboxListener listener) {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(listener, "listener");
    Optional<RuntimeClass> runtimeClass;
    try {
      runtimeClass = findRuntimeClass();
    } catch (KubernetesClientException e) {
      throw new UnableToLaunchSandboxException(
          "launch of run " + spec.runId() + " on Kubernetes: " + apiFailure(e), e);
    }
    if (runtimeClass.isEmpty() && (config.requireRuntimeClass() || spec.requireRuntimeClass())) {
      throw new UnableToLaunchSandboxException(
          "launch of run " + spec.runId() + " on Kubernetes refused: " + missingRuntimeClass("it"));
    }
    Optional<String> runtimeClassName = runtimeClass.map(rc -> config.runtimeClassName());
    String runtime = runtimeClass.map(RuntimeClass::getHandler).orElse(NODE_DEFAULT_RUNTIME);
    SandboxLauncher launcher = new SandboxLauncher(client, config, clock, factory);
    return launcher.launch(spec, runtimeClassName, runtime, listener);
  }

  @Override
  public ReapReport reap(Instant now, Predicate<String> isLive) {
    return reaper.reap(now, isLive);
  }

  private Optional<RuntimeClass> findRuntimeClass() {
    return Optional.ofNullable(client.runtimeClasses().withName(config.runtimeClassName()).get());
  }

  private String missingRuntimeClass(String subject) {
    return "RuntimeClass "
        + config.runtimeClassName()
        + " not found at "
        + client.getMasterUrl()
        + " and require_runtime_class is on, so "
        + subject
        + " will not fall back to the node's default runtime (install runsc on the nodes, add it"
        + " to containerd's config and apply deploy/k3s/sandbox/runtimeclass-gvisor.yaml; see"
        + " docs/backends/k8s.md)";
  }

  private String apiFailure(KubernetesClientException e) {
    return "reading RuntimeClass "
        + config.runtimeClassName()
        + " from the Kubernetes API at "
        + client.getMasterUrl()
        + " failed: "
        + Messages.of(e)
        + " (check the kubeconfig or in-cluster ServiceAccount and the ClusterRole in"
        + " deploy/k3s/sandbox/agent-sandbox.yaml)";
  }
}
