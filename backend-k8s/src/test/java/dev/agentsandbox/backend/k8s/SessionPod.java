package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.relay.RelayMain;
import dev.agentsandbox.steprunner.RunnerBinary;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.PodStatusBuilder;
import io.fabric8.kubernetes.api.model.batch.v1.Job;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.awaitility.Awaitility;

/**
 * Plays the kubelet for a session's agent pod on this host: once the backend created the Job, it
 * creates the pod with the address 127.0.0.1 and starts the pod's two session containers as real
 * processes from the generated spec, exactly as written there but for the paths a container maps
 * (the runner's volume, the workspace) and the kubelet's {@code $(VAR)} expansion of the pod's
 * address: the step runner from the agent container's command, with its environment, and the relay
 * from the {@value SessionContainers#RELAY} container's command, as its own JVM. The relay's log is
 * served through the mock API server as the kubelet serves {@code pods/log}. When the runner exits,
 * the pod and the Job end as the kubelet and the Job controller would end them, and the collect
 * sidecar's log carries the workspace's {@code out/} folder.
 */
final class SessionPod implements AutoCloseable {
  final Path workspace;
  final List<String> relayLog = new CopyOnWriteArrayList<>();
  final List<String> runnerErrorLines = new CopyOnWriteArrayList<>();
  private final KubernetesClient client;
  private final KubernetesMockServer server;
  private final String runId;
  private final Path dir;
  private volatile Process runner;
  private volatile Process relay;
  private volatile Container relayContainer;
  private volatile Container agentContainer;
  private volatile boolean withoutRunner;
  private volatile String announced;
  private final List<String> extraRelayArgs = new CopyOnWriteArrayList<>();

  SessionPod(KubernetesClient client, KubernetesMockServer server, String runId, Path dir)
      throws IOException {
    this.client = client;
    this.server = server;
    this.runId = runId;
    this.dir = dir;
    this.workspace = Files.createDirectories(dir.resolve("workspace"));
    Files.createDirectories(workspace.resolve("out"));
  }

  /** A pod whose agent container never starts its runner (the relay gives up after 2 s). */
  SessionPod withoutRunner() {
    withoutRunner = true;
    extraRelayArgs.addAll(List.of("--runner-timeout-seconds", "2"));
    return this;
  }

  /** A log whose first line announces {@code pin} instead of what the relay printed. */
  SessionPod announcing(String pin) {
    announced =
        dev.agentsandbox.relay.ReadyLine.format(new dev.agentsandbox.relay.CertificatePin(pin));
    return this;
  }

  /** Starts playing once the Job exists (on a thread of its own, bounded). */
  SessionPod start() {
    Thread.ofPlatform().daemon().name("session-pod-" + runId).start(this::play);
    return this;
  }

  Process runner() {
    return runner;
  }

  Process relay() {
    return relay;
  }

  Container relayContainer() {
    return relayContainer;
  }

  Container agentContainer() {
    return agentContainer;
  }

  private void play() {
    String ns = BundleFactory.namespaceOf(runId);
    Job[] job = new Job[1];
    try {
      Awaitility.await("the session's Job")
          .atMost(Duration.ofSeconds(60))
          .pollInterval(Duration.ofMillis(20))
          .until(
              () ->
                  (job[0] =
                          client
                              .batch()
                              .v1()
                              .jobs()
                              .inNamespace(ns)
                              .withName(BundleFactory.JOB)
                              .get())
                      != null);
    } catch (RuntimeException e) {
      return;
    }
    serveLogs();
    PodSpec spec = job[0].getSpec().getTemplate().getSpec();
    Map<String, String> labels =
        new TreeMap<>(job[0].getSpec().getTemplate().getMetadata().getLabels());
    Pod pod =
        new PodBuilder()
            .withNewMetadata()
            .withName(FakeCluster.AGENT_POD)
            .withNamespace(ns)
            .withLabels(labels)
            .endMetadata()
            .withSpec(spec)
            .build();
    client.pods().inNamespace(ns).resource(pod).create();
    agentContainer = spec.getContainers().get(0);
    relayContainer =
        spec.getInitContainers().stream()
            .filter(c -> c.getName().equals(SessionContainers.RELAY))
            .findFirst()
            .orElseThrow();
    try {
      // The native sidecar first, then the agent's container: the kubelet's order.
      relay = relayProcess(relayContainer).start();
      pumpLines(relay.getInputStream(), relayLog);
      pumpLines(relay.getErrorStream(), new CopyOnWriteArrayList<>());
    } catch (IOException e) {
      throw new IllegalStateException("starting the session relay's process", e);
    }
    pod.setStatus(
        new PodStatusBuilder()
            .withPhase("Running")
            .withPodIP("127.0.0.1")
            .addNewContainerStatus()
            .withName(BundleFactory.AGENT_CONTAINER)
            .withNewState()
            .withNewRunning()
            .endRunning()
            .endState()
            .endContainerStatus()
            .build());
    client.pods().inNamespace(ns).resource(pod).updateStatus();
    if (withoutRunner) {
      return;
    }
    try {
      runner = runnerProcess(agentContainer).start();
    } catch (IOException e) {
      throw new IllegalStateException("starting the step runner's process", e);
    }
    pumpLines(runner.getErrorStream(), runnerErrorLines);
    try {
      runner.waitFor();
    } catch (InterruptedException e) {
      return;
    }
    end(pod, runner.exitValue());
  }

  /**
   * Serves the relay container's log and the collect sidecar's as the kubelet would: each as it is
   * when asked (the relay's grows as it writes; the sidecar's holds the out folder as it is then).
   */
  private void serveLogs() {
    server
        .expect()
        .get()
        .withPath(
            "/api/v1/namespaces/"
                + BundleFactory.namespaceOf(runId)
                + "/pods/"
                + FakeCluster.AGENT_POD
                + "/log?pretty=false&container="
                + SessionContainers.RELAY)
        .andReply(200, request -> relayLogNow())
        .always();
    server
        .expect()
        .get()
        .withPath(FakeCluster.collectLogPath(runId))
        .andReply(200, request -> OutputTars.frame(outTar()))
        .always();
  }

  private String relayLogNow() {
    List<String> lines = new ArrayList<>(relayLog);
    if (lines.isEmpty()) {
      return "";
    }
    if (announced != null && lines.get(0).startsWith(dev.agentsandbox.relay.ReadyLine.PREFIX)) {
      lines.set(0, announced);
    }
    return String.join("\n", lines) + "\n";
  }

  /** The agent's container ended: the pod and the Job end, the collect sidecar writes out/. */
  private void end(Pod pod, int exit) {
    String ns = BundleFactory.namespaceOf(runId);
    try {
      Pod current = client.pods().inNamespace(ns).withName(FakeCluster.AGENT_POD).get();
      if (current == null) {
        return;
      }
      current.setStatus(
          new PodStatusBuilder()
              .withPhase(exit == 0 ? "Succeeded" : "Failed")
              .withPodIP("127.0.0.1")
              .addNewContainerStatus()
              .withName(BundleFactory.AGENT_CONTAINER)
              .withNewState()
              .withNewTerminated()
              .withExitCode(exit)
              .endTerminated()
              .endState()
              .endContainerStatus()
              .build());
      client.pods().inNamespace(ns).resource(current).updateStatus();
      Job job = client.batch().v1().jobs().inNamespace(ns).withName(BundleFactory.JOB).get();
      if (job != null) {
        job.setStatus(
            new io.fabric8.kubernetes.api.model.batch.v1.JobStatusBuilder()
                .addNewCondition()
                .withType(exit == 0 ? "Complete" : "Failed")
                .withStatus("True")
                .endCondition()
                .build());
        client.batch().v1().jobs().inNamespace(ns).resource(job).updateStatus();
      }
    } catch (RuntimeException e) {
      // The namespace is gone already (torn down): nothing to end.
    }
  }

  private byte[] outTar() {
    OutputTars tar = new OutputTars().folder("out");
    try (Stream<Path> files = Files.walk(workspace.resolve("out"))) {
      for (Path file : files.filter(Files::isRegularFile).sorted().toList()) {
        tar.file("out/" + workspace.resolve("out").relativize(file), Files.readAllBytes(file));
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    return tar.bytes();
  }

  /** The agent container's command, its runner path and workspace mapped onto this host. */
  private ProcessBuilder runnerProcess(Container agent) throws IOException {
    Path bin = Files.createDirectories(dir.resolve("runner-volume"));
    Path binary = RunnerBinary.extractTo(bin);
    List<String> command = new ArrayList<>();
    for (String arg : agent.getCommand()) {
      command.add(
          arg.equals(SessionContainers.RUNNER_DIR + "/asb-step-runner")
              ? binary.toString()
              : arg.equals(dev.agentsandbox.backend.RunContract.WORKSPACE)
                  ? workspace.toString()
                  : arg);
    }
    ProcessBuilder builder = new ProcessBuilder(command);
    builder.environment().clear();
    builder.environment().put("PATH", "/usr/local/bin:/usr/bin:/bin");
    for (EnvVar variable : agent.getEnv()) {
      if (variable.getValue() != null) {
        builder.environment().put(variable.getName(), variable.getValue());
      }
    }
    builder.redirectOutput(ProcessBuilder.Redirect.DISCARD);
    return builder;
  }

  /** The relay container's command, as its own JVM, with the kubelet's {@code $(VAR)} expansion. */
  private ProcessBuilder relayProcess(Container relay) {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(List.of("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"));
    command.addAll(
        List.of("-cp", System.getProperty("java.class.path"), RelayMain.class.getName()));
    List<String> args = relay.getCommand();
    if (!args.get(0).equals(SessionContainers.RELAY_IN_IMAGE)) {
      throw new IllegalStateException("the relay container runs " + args.get(0));
    }
    for (String arg : args.subList(1, args.size())) {
      command.add(arg.replace("$(" + SessionContainers.POD_IP_ENV + ")", "127.0.0.1"));
    }
    command.addAll(extraRelayArgs);
    return new ProcessBuilder(command);
  }

  private static void pumpLines(java.io.InputStream in, List<String> lines) {
    Thread.ofPlatform()
        .daemon()
        .start(
            () -> {
              try (BufferedReader reader =
                  new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = reader.readLine()) != null) {
                  lines.add(line);
                }
              } catch (IOException e) {
                // Ended.
              }
            });
  }

  @Override
  public void close() throws InterruptedException {
    for (Process process : new Process[] {runner, relay}) {
      if (process != null) {
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
          process.destroyForcibly();
          process.waitFor(10, TimeUnit.SECONDS);
        }
      }
    }
  }
}
