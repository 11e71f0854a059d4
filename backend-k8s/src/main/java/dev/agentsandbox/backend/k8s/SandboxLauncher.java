package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.batch.v1.Job;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * Creates one run's objects in order, waits for its proxy, then writes the run's credentials (if
 * any) and starts the agent's Job.
 */
final class SandboxLauncher {
  private final KubernetesClient client;
  private final KubernetesBackendConfig config;
  private final Clock clock;
  private final BundleFactory factory;

  SandboxLauncher(
      KubernetesClient client, KubernetesBackendConfig config, Clock clock, BundleFactory factory) {
    this.client = client;
    this.config = config;
    this.clock = clock;
    this.factory = factory;
  }

  Sandbox launch(
      RunSpec spec, Optional<String> runtimeClass, String runtime, SandboxListener listener) {
    return launch(spec, runtimeClass, runtime, listener, Optional.empty());
  }

  /** A run's sandbox, or with {@code session} a session's (its relay and runner, its policy). */
  KubernetesSandbox launch(
      RunSpec spec,
      Optional<String> runtimeClass,
      String runtime,
      SandboxListener listener,
      Optional<SessionWiring> session) {
    KubernetesBundle bundle = factory.build(spec, runtimeClass, Optional.empty(), session);
    KubernetesSandbox sandbox =
        new KubernetesSandbox(
            client, config, clock, spec.runId(), runtime, listener, session.isPresent());
    List<HasMetadata> objects = bundle.objects();
    boolean namespaceCreated = false;
    try {
      // Everything but the credentials and the Job: the fence exists before any pod, the proxy
      // before the agent.
      for (HasMetadata object : objects) {
        String name = object.getMetadata().getName();
        if (object instanceof Job
            || (object instanceof Secret && name.equals(BundleFactory.CREDENTIALS_SECRET))
            || name.equals(InspectionPods.TRUST_CONFIG_MAP)) {
          continue;
        }
        if (object instanceof Secret && name.equals(InspectionPods.PROXY_CREDENTIALS_SECRET)) {
          // Built here with the values (the bundle holds redacted ones) and kept nowhere.
          createSecret(
              spec,
              InspectionPods.proxyCredentials(spec, BundleFactory.Values.INCLUDED),
              spec.proxyCredentials());
          continue;
        }
        create(spec, object);
        // A namespace that was already there is not ours to delete when a later step fails.
        namespaceCreated = true;
      }
      String proxyIp = awaitProxy(spec, bundle.namespace());
      if (!spec.egress().inspect().isEmpty()) {
        String caPem = awaitCaCertificate(spec, bundle.namespace());
        create(spec, InspectionPods.trust(spec, java.util.Optional.of(caPem)));
      }
      if (!spec.credentials().isEmpty()) {
        // Written only once the sandbox stands, so a launch that fails before never stored them;
        // built here with the values (the bundle holds redacted ones) and kept nowhere.
        createSecret(
            spec, factory.credentials(spec, BundleFactory.Values.INCLUDED), spec.credentials());
      }
      Job job =
          factory
              .build(spec, runtimeClass, Optional.of(proxyIp), session)
              .get(Job.class, BundleFactory.JOB);
      create(spec, job);
      return sandbox;
    } catch (RuntimeException e) {
      if (namespaceCreated) {
        tearDownAfter(sandbox, e);
      }
      throw e;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      UnableToLaunchSandboxException failure =
          new UnableToLaunchSandboxException(
              "launch of run "
                  + spec.runId()
                  + " in namespace "
                  + bundle.namespace()
                  + ": interrupted while waiting for the egress proxy (its namespace was deleted)",
              e);
      tearDownAfter(sandbox, failure);
      throw failure;
    }
  }

  static void tearDownAfter(KubernetesSandbox sandbox, RuntimeException failure) {
    try {
      sandbox.teardown();
    } catch (RuntimeException teardownFailure) {
      // The launch failure is the news; the reaper removes the namespace from its labels later.
      failure.addSuppressed(teardownFailure);
    }
  }

  private void create(RunSpec spec, HasMetadata object) {
    try {
      client.resource(object).create();
    } catch (KubernetesClientException e) {
      String where =
          object.getMetadata().getNamespace() == null
              ? ""
              : " in namespace " + object.getMetadata().getNamespace();
      throw new UnableToLaunchSandboxException(
          "creating "
              + object.getKind()
              + " "
              + object.getMetadata().getName()
              + where
              + " for run "
              + spec.runId()
              + ": "
              + Messages.of(e)
              + " (check the control plane's ClusterRole and the cluster's admission policies)",
          e);
    }
  }

  /**
   * Creates the credentials Secret. A refusal's message is the API server's and could quote what
   * was sent (an admission webhook is free to), so every credential value is cut out of it, and the
   * client's exception, whose message holds the same text, is not kept as the cause.
   */
  private void createSecret(RunSpec spec, Secret secret, List<RunCredential> held) {
    try {
      client.resource(secret).create();
    } catch (KubernetesClientException e) {
      String answer =
          Messages.redacted(
              e, held.stream().map(RunCredential::value).toList(), BundleFactory.REDACTED);
      throw new UnableToLaunchSandboxException(
          "creating Secret "
              + secret.getMetadata().getName()
              + " in namespace "
              + secret.getMetadata().getNamespace()
              + " for run "
              + spec.runId()
              + ": "
              + answer
              + " (check the control plane's ClusterRole grants create on secrets and the"
              + " cluster's admission policies)");
    }
  }

  /**
   * Waits until the proxy's Service has a ClusterIP and the proxy pod is ready, so that the agent's
   * first connection finds a listening proxy.
   */
  private String awaitProxy(RunSpec spec, String namespace) throws InterruptedException {
    Instant until = clock.instant().plus(config.proxyReadyTimeout());
    String waitingFor = "a ClusterIP for Service " + BundleFactory.PROXY;
    while (true) {
      Service service =
          client.services().inNamespace(namespace).withName(BundleFactory.PROXY).get();
      String ip =
          service == null || service.getSpec() == null ? null : service.getSpec().getClusterIP();
      if (ip != null && !ip.isBlank() && !"None".equals(ip)) {
        Pod pod = client.pods().inNamespace(namespace).withName(BundleFactory.PROXY).get();
        String phase = pod == null || pod.getStatus() == null ? null : pod.getStatus().getPhase();
        if ("Failed".equals(phase) || "Succeeded".equals(phase)) {
          throw new UnableToLaunchSandboxException(
              "starting the egress proxy of run "
                  + spec.runId()
                  + " in namespace "
                  + namespace
                  + ": proxy pod ended with phase "
                  + phase
                  + " before the agent started"
                  + " (kubectl -n "
                  + namespace
                  + " logs "
                  + BundleFactory.PROXY
                  + ")");
        }
        if (isReady(pod)) {
          return ip;
        }
        waitingFor = "pod " + BundleFactory.PROXY + " to become Ready (phase " + phase + ")";
      }
      Duration left = Duration.between(clock.instant(), until);
      if (left.isNegative() || left.isZero()) {
        throw new UnableToLaunchSandboxException(
            "starting the egress proxy of run "
                + spec.runId()
                + " in namespace "
                + namespace
                + ": still waiting for "
                + waitingFor
                + " after "
                + config.proxyReadyTimeout()
                + " (kubectl -n "
                + namespace
                + " describe pod "
                + BundleFactory.PROXY
                + "; is the image "
                + config.proxyImage()
                + " pullable from the nodes?)");
      }
      Thread.sleep(Math.min(config.pollInterval().toMillis(), Math.max(1, left.toMillis())));
    }
  }

  /**
   * The run CA's certificate from the proxy's log ({@code get pods/log}, which the control plane
   * has for outputs too): the proxy prints it once before its ready line; read until it is there,
   * within the proxy's ready time-out. Only that line is kept.
   */
  private String awaitCaCertificate(RunSpec spec, String namespace) throws InterruptedException {
    Instant until = clock.instant().plus(config.proxyReadyTimeout());
    String problem = "no line " + dev.agentsandbox.policy.config.ProxyPolicy.CA_LINE.strip();
    while (true) {
      try {
        String log =
            client
                .pods()
                .inNamespace(namespace)
                .withName(BundleFactory.PROXY)
                .inContainer(BundleFactory.PROXY_CONTAINER)
                .getLog();
        if (log != null) {
          for (String line : log.split("\n")) {
            java.util.Optional<String> pem =
                dev.agentsandbox.policy.config.ProxyPolicy.caCertificate(line);
            if (pem.isPresent()) {
              return pem.get();
            }
          }
        }
      } catch (KubernetesClientException e) {
        problem = Messages.of(e);
      }
      if (!clock.instant().isBefore(until)) {
        throw new UnableToLaunchSandboxException(
            "reading the run CA's certificate from the egress proxy of run "
                + spec.runId()
                + " in namespace "
                + namespace
                + ": "
                + problem
                + " after "
                + config.proxyReadyTimeout()
                + " (is the proxy image older than inspection? kubectl -n "
                + namespace
                + " logs "
                + BundleFactory.PROXY
                + ")");
      }
      Thread.sleep(Math.max(1, config.pollInterval().toMillis()));
    }
  }

  private static boolean isReady(Pod pod) {
    if (pod == null || pod.getStatus() == null || pod.getStatus().getConditions() == null) {
      return false;
    }
    for (PodCondition condition : pod.getStatus().getConditions()) {
      if ("Ready".equals(condition.getType()) && "True".equals(condition.getStatus())) {
        return true;
      }
    }
    return false;
  }
}
