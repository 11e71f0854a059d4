package dev.agentsandbox.backend.k8s;

import static org.awaitility.Awaitility.await;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodStatusBuilder;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.batch.v1.Job;
import io.fabric8.kubernetes.api.model.batch.v1.JobStatusBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.awaitility.core.ConditionTimeoutException;

/**
 * Plays the controllers the mock API server does not run: it gives the proxy's Service a ClusterIP,
 * marks the proxy pod Ready, creates the agent's pod, finishes the Job and serves both pods' logs.
 */
final class FakeCluster implements AutoCloseable {
  static final String AGENT_POD = "agent-x7k2p";

  private final KubernetesClient client;
  private final KubernetesMockServer server;
  private final ExecutorService controllers = Executors.newSingleThreadExecutor();
  private final List<Future<?>> running = new ArrayList<>();

  FakeCluster(KubernetesClient client, KubernetesMockServer server) {
    this.client = client;
    this.server = server;
  }

  /** Like a real cluster: the proxy Service gets {@code ip} and the proxy pod becomes Ready. */
  void serveProxy(String runId, String ip) {
    serveProxy(runId, ip, "Running", true);
  }

  /** Moves the proxy pod to {@code phase} and (optionally) Ready, once the launch created it. */
  void serveProxy(String runId, String ip, String phase, boolean ready) {
    String ns = BundleFactory.namespaceOf(runId);
    running.add(
        controllers.submit(
            () -> {
              boolean[] ipSet = {false};
              boolean[] podSet = {false};
              try {
                // Polls like a controller would watch; bounded, since a launch that fails early
                // never creates the objects.
                await()
                    .atMost(Duration.ofSeconds(20))
                    .pollInterval(Duration.ofMillis(10))
                    .until(
                        () -> {
                          Service service =
                              client.services().inNamespace(ns).withName(BundleFactory.PROXY).get();
                          if (!ipSet[0] && service != null && ip != null) {
                            client
                                .services()
                                .inNamespace(ns)
                                .withName(BundleFactory.PROXY)
                                .edit(
                                    s -> {
                                      s.getSpec().setClusterIP(ip);
                                      return s;
                                    });
                            ipSet[0] = true;
                          }
                          Pod pod =
                              client.pods().inNamespace(ns).withName(BundleFactory.PROXY).get();
                          if (!podSet[0] && pod != null) {
                            pod.setStatus(
                                new PodStatusBuilder()
                                    .withPhase(phase)
                                    .addNewCondition()
                                    .withType("Ready")
                                    .withStatus(ready ? "True" : "False")
                                    .endCondition()
                                    .build());
                            client.pods().inNamespace(ns).resource(pod).updateStatus();
                            podSet[0] = true;
                          }
                          return podSet[0] && (ipSet[0] || ip == null);
                        });
              } catch (ConditionTimeoutException e) {
                // The launch never created them: nothing to serve, as on a real cluster.
              }
              return null;
            }));
  }

  /** The agent's pod as the Job controller would create it, with its output and exit. */
  void agentPod(String runId, Integer exitCode) {
    String ns = BundleFactory.namespaceOf(runId);
    Job job = client.batch().v1().jobs().inNamespace(ns).withName(BundleFactory.JOB).get();
    Map<String, String> labels =
        new TreeMap<>(job.getSpec().getTemplate().getMetadata().getLabels());
    labels.put("batch.kubernetes.io/job-name", BundleFactory.JOB);
    Pod pod =
        new PodBuilder()
            .withNewMetadata()
            .withName(AGENT_POD)
            .withNamespace(ns)
            .withLabels(labels)
            .endMetadata()
            .withSpec(job.getSpec().getTemplate().getSpec())
            .build();
    client.pods().inNamespace(ns).resource(pod).create();
    var status =
        new PodStatusBuilder()
            .withPhase(exitCode == null ? "Running" : exitCode == 0 ? "Succeeded" : "Failed");
    var container = status.addNewContainerStatus().withName(BundleFactory.AGENT_CONTAINER);
    if (exitCode == null) {
      container.withNewState().withNewRunning().endRunning().endState();
    } else {
      container
          .withNewState()
          .withNewTerminated()
          .withExitCode(exitCode)
          .endTerminated()
          .endState();
    }
    pod.setStatus(container.endContainerStatus().build());
    client.pods().inNamespace(ns).resource(pod).updateStatus();
  }

  /**
   * The agent's pod as the kubelet leaves it when the runtime check fails: the init container
   * terminated with the check's exit status and message, the agent's container never started.
   */
  void agentPodFailingRuntimeCheck(String runId, String message) {
    String ns = BundleFactory.namespaceOf(runId);
    Job job = client.batch().v1().jobs().inNamespace(ns).withName(BundleFactory.JOB).get();
    Map<String, String> labels =
        new TreeMap<>(job.getSpec().getTemplate().getMetadata().getLabels());
    Pod pod =
        new PodBuilder()
            .withNewMetadata()
            .withName(AGENT_POD)
            .withNamespace(ns)
            .withLabels(labels)
            .endMetadata()
            .withSpec(job.getSpec().getTemplate().getSpec())
            .build();
    pod.getSpec().setNodeName("node-7");
    client.pods().inNamespace(ns).resource(pod).create();
    pod.setStatus(
        new PodStatusBuilder()
            .withPhase("Failed")
            .addNewInitContainerStatus()
            .withName(SandboxPods.RUNTIME_CHECK)
            .withNewState()
            .withNewTerminated()
            .withExitCode(SandboxPods.RUNTIME_MISMATCH_EXIT)
            .withMessage(message)
            .endTerminated()
            .endState()
            .endInitContainerStatus()
            .addNewContainerStatus()
            .withName(BundleFactory.AGENT_CONTAINER)
            .withNewState()
            .withNewWaiting()
            .withReason("PodInitializing")
            .endWaiting()
            .endState()
            .endContainerStatus()
            .build());
    client.pods().inNamespace(ns).resource(pod).updateStatus();
  }

  /** Serves the agent's and the proxy's logs as the kubelet would. */
  void logs(String runId, String agentLog, String proxyLog) {
    String ns = BundleFactory.namespaceOf(runId);
    server
        .expect()
        .get()
        .withPath(
            "/api/v1/namespaces/"
                + ns
                + "/pods/"
                + AGENT_POD
                + "/log?pretty=false&container=agent&tailLines=200")
        .andReturn(200, agentLog)
        .always();
    server
        .expect()
        .get()
        .withPath(
            "/api/v1/namespaces/" + ns + "/pods/egress-proxy/log?pretty=false&container=proxy")
        .andReturn(200, proxyLog)
        .always();
  }

  /** Serves the proxy's log followed ({@code follow=true}), as a session follows it. */
  void followProxyLog(String runId, String log) {
    String ns = BundleFactory.namespaceOf(runId);
    server
        .expect()
        .get()
        .withPath(
            "/api/v1/namespaces/"
                + ns
                + "/pods/egress-proxy/log?pretty=false&container=proxy&follow=true")
        .andReturn(200, log)
        .always();
  }

  /**
   * Serves the collect sidecar's log, followed, as the kubelet would once the sidecar wrote its
   * stream and ended. Only the {@code collect} container's log: the agent's is {@link #logs}.
   */
  void collectLog(String runId, String log) {
    server.expect().get().withPath(collectLogPath(runId)).andReturn(200, log).always();
  }

  static String collectLogPath(String runId) {
    return "/api/v1/namespaces/"
        + BundleFactory.namespaceOf(runId)
        + "/pods/"
        + AGENT_POD
        + "/log?pretty=false&container="
        + SandboxPods.COLLECT
        + "&follow=true";
  }

  /** Sets the Job's finished condition as the Job controller would. */
  void finishJob(String runId, String type, String reason) {
    String ns = BundleFactory.namespaceOf(runId);
    Job job = client.batch().v1().jobs().inNamespace(ns).withName(BundleFactory.JOB).get();
    job.setStatus(
        new JobStatusBuilder()
            .addNewCondition()
            .withType(type)
            .withStatus("True")
            .withReason(reason)
            .withMessage(reason == null ? null : "reason " + reason)
            .endCondition()
            .build());
    client.batch().v1().jobs().inNamespace(ns).resource(job).updateStatus();
  }

  /** Stops the controllers and fails the test if one of them failed. */
  @Override
  public void close() {
    controllers.shutdownNow();
    for (Future<?> controller : running) {
      if (controller.isDone() && !controller.isCancelled()) {
        try {
          controller.get();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        } catch (ExecutionException e) {
          throw new AssertionError("a fake controller failed", e.getCause());
        }
      }
    }
  }
}
